/*
 * banned.h - C library functions Kiln does not call, as git bans them.
 *
 * strcpy, strcat, sprintf and vsprintf write as far as their source goes,
 * whatever the destination holds; strncpy and strncat look bounded but
 * leave a string unterminated (strncpy) or take a count that is not the
 * buffer's size (strncat); gets cannot be bounded at all. Use snprintf
 * (or memcpy with a length checked first). strtok, gmtime, localtime,
 * ctime and asctime keep their state in one static buffer, which two
 * threads of `kiln serve` would share: use strtok_r, gmtime_r,
 * localtime_r, strftime.
 *
 * Every .c file includes this header after all its other includes (a
 * system header after it would have its declarations of these renamed).
 * A call then fails to compile with an error that names the function:
 * "sorry_strcpy_is_a_banned_function". The two files that must name a
 * banned function, common/thread_time.c (the per-thread gmtime and ctime
 * the libraries call) and its test, do not include it;
 * tests/check_banned.sh checks that every other file does.
 */
#ifndef KILN_BANNED_H
#define KILN_BANNED_H

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) BANNED(strncat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef gets
#define gets(x) BANNED(gets)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef gmtime
#define gmtime(t) BANNED(gmtime)
#undef localtime
#define localtime(t) BANNED(localtime)
#undef ctime
#define ctime(t) BANNED(ctime)
#undef asctime
#define asctime(t) BANNED(asctime)

#endif
