/*
 * color.c - HSL lightness arithmetic (color.h).
 */
#include "color.h"

#include <math.h>
#include "banned.h"

static double hue_to_channel(double p, double q, double t)
{
    if (t < 0)
        t += 1;
    if (t > 1)
        t -= 1;
    if (t < 1.0 / 6)
        return p + (q - p) * 6 * t;
    if (t < 0.5)
        return q;
    if (t < 2.0 / 3)
        return p + (q - p) * (2.0 / 3 - t) * 6;
    return p;
}

int32_t kiln_color_lum(int32_t rgb, double mod, double off)
{
    if (mod == 1.0 && off == 0.0)
        return rgb;
    double r = ((rgb >> 16) & 0xFF) / 255.0, g = ((rgb >> 8) & 0xFF) / 255.0,
           b = (rgb & 0xFF) / 255.0;
    double max = fmax(r, fmax(g, b)), min = fmin(r, fmin(g, b));
    double l = (max + min) / 2, h = 0, s = 0;
    if (max > min) {
        double d = max - min;
        s = l > 0.5 ? d / (2 - max - min) : d / (max + min);
        if (max == r)
            h = (g - b) / d + (g < b ? 6 : 0);
        else if (max == g)
            h = (b - r) / d + 2;
        else
            h = (r - g) / d + 4;
        h /= 6;
    }
    l = fmin(1, fmax(0, l * mod + off));
    if (s == 0) {
        r = g = b = l;
    } else {
        double q = l < 0.5 ? l * (1 + s) : l + s - l * s;
        double p = 2 * l - q;
        r = hue_to_channel(p, q, h + 1.0 / 3);
        g = hue_to_channel(p, q, h);
        b = hue_to_channel(p, q, h - 1.0 / 3);
    }
    return (int32_t)(lround(r * 255) << 16 | lround(g * 255) << 8 | lround(b * 255));
}
