/*
 * color.h - color arithmetic shared by the writers.
 *
 * Office derives darker and lighter variants of a theme color by scaling
 * and shifting its HSL lightness (DrawingML's lumMod and lumOff); Word's
 * heading colors and the PDF charts' palette beyond the accents are made
 * that way, so the docx and the PDF agree on what "accent 1, darker" is.
 */
#ifndef KILN_COLOR_H
#define KILN_COLOR_H

#include <stdint.h>

/* rgb (0xRRGGBB) with its HSL lightness L replaced by L * mod + off, clamped
 * to 0..1: mod 0.75 is "25% darker", mod 0.4 off 0.6 "60% lighter". */
int32_t kiln_color_lum(int32_t rgb, double mod, double off);

#endif
