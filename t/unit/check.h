/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CHECKF: a CU_ASSERT whose failure text is formatted, for table-driven
 * tests and helpers where the stringified condition ("rc == want") would not
 * say which row or which input failed. The failing line is the caller's.
 */
#ifndef PT_T_UNIT_CHECK_H
#define PT_T_UNIT_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#define CHECKF(cond, ...)						\
	check_fmt((cond), __LINE__, __FILE__, false, __VA_ARGS__)
/* Same, ending the test on failure (going on would only crash). */
#define CHECKF_FATAL(cond, ...)						\
	check_fmt((cond), __LINE__, __FILE__, true, __VA_ARGS__)
/* For helpers that take their caller's position as <file>, <line>. */
#define CHECKF_AT(file, line, cond, ...)				\
	check_fmt((cond), (line), (file), false, __VA_ARGS__)

static inline bool __attribute__((format(printf, 5, 6)))
check_fmt(bool ok, unsigned line, const char *file, bool fatal,
    const char *fmt, ...)
{
	char	 msg[1024];
	va_list	 ap;

	if (ok) {
		/* Still counted, so the assertion totals stay honest. */
		CU_assertImplementation(CU_TRUE, line, "", file, "", CU_FALSE);
		return true;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* CUnit copies <msg> into its failure record. */
	CU_assertImplementation(CU_FALSE, line, msg, file, "",
	    fatal ? CU_TRUE : CU_FALSE);
	return false;
}

/*
 * A wall-clock bound in ms, stretched for a slow machine the way the
 * integration tests' ptest.bound() is: by PT_SLOW (a factor >= 1), else by
 * 3 in a sanitizer build (PT_SANITIZERS=yes, set by `make check`), else 1.
 * Only bounds that a loaded machine can overrun are stretched; a lower
 * bound (something must not happen before <ms>) never is.
 */
static inline unsigned
check_bound_ms(unsigned ms)
{
	const char	*e;
	char		*end;
	double		 slow = 1.0;

	if ((e = getenv("PT_SLOW")) != NULL && *e != '\0') {
		slow = strtod(e, &end);
		if (*end != '\0' || !(slow >= 1.0))
			slow = 1.0;
	} else if ((e = getenv("PT_SANITIZERS")) != NULL &&
	    strcmp(e, "yes") == 0)
		slow = 3.0;
	return (unsigned)((double)ms * slow);
}

#endif
