/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The unit-test runner: registers every suite listed in suites.h, runs them
 * with the bare CUnit core, and reports in TAP on stdout, because automake
 * runs this binary through tap-driver.sh and that driver reads nothing else.
 * Each test is one "ok"/"not ok" line named "suite: test", each failed
 * assertion one "# file:line: condition" line under it, and the plan comes
 * last since the count is only known once the run is over.
 *
 * It deliberately does not use CUnit's basic or console runners: they print
 * their own summary to stdout, which would corrupt the TAP stream, and they
 * replace the handlers installed here. Code under test may log to stderr;
 * the driver keeps that in the .log file without parsing it.
 *
 * Exit status: 0 when every test passed, 1 otherwise.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <CUnit/CUnit.h>
#include <CUnit/TestRun.h>

/* A module's unit tests reuse this runner with their own list:
 * -DPT_UNIT_SUITES='"modules/<name>/t_suites.h"'. */
#ifdef PT_UNIT_SUITES
#include PT_UNIT_SUITES
#else
#include "t/unit/suites.h"
#endif

static void (*const suites[])(void) = { SUITES_ALL };

static unsigned	 tap_count;
static unsigned	 tap_failed;

/* One diagnostic line; a newline inside <text> would end the TAP comment
 * early and be read as a malformed result line. */
static void
tap_diag(const char *file, unsigned line, const char *text)
{
	const char	*p;

	printf("# %s:%u: ", file != NULL ? file : "?", line);
	for (p = text != NULL ? text : ""; *p != '\0'; p++)
		putchar(*p == '\n' ? ' ' : *p);
	putchar('\n');
}

static void
tap_on_test_complete(const CU_pTest test, const CU_pSuite suite,
    const CU_pFailureRecord failures)
{
	CU_pFailureRecord	 f;
	bool			 failed = false;

	/* CUnit hands over the first failure record of this test; the list
	 * goes on to the end of the run so far, which is this test's last. */
	for (f = failures; f != NULL; f = f->pNext)
		if (f->pTest == test)
			failed = true;
	tap_count++;
	if (failed)
		tap_failed++;
	printf("%s %u - %s: %s\n", failed ? "not ok" : "ok", tap_count,
	    suite->pName, test->pName);
	for (f = failures; f != NULL; f = f->pNext)
		if (f->pTest == test)
			tap_diag(f->strFileName, f->uiLineNumber,
			    f->strCondition);
	/* A crash in the next test must not swallow this result. */
	fflush(stdout);
}

/* A suite whose set-up failed runs none of its tests: count it as one
 * failed test so the run cannot look green. */
static void
tap_on_suite_init_failure(const CU_pSuite suite)
{
	tap_count++;
	tap_failed++;
	printf("not ok %u - %s: suite set-up failed, its tests did not run\n",
	    tap_count, suite->pName);
	fflush(stdout);
}

static void
tap_on_suite_cleanup_failure(const CU_pSuite suite)
{
	tap_count++;
	tap_failed++;
	printf("not ok %u - %s: suite clean-up failed\n", tap_count,
	    suite->pName);
	fflush(stdout);
}

int
main(void)
{
	size_t	 i;

	if (CU_initialize_registry() != CUE_SUCCESS) {
		printf("Bail out! CUnit: %s\n", CU_get_error_msg());
		return 1;
	}
	for (i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
		suites[i]();
	if (CU_get_error() != CUE_SUCCESS) {
		printf("Bail out! registering suites: %s\n",
		    CU_get_error_msg());
		CU_cleanup_registry();
		return 1;
	}
	CU_set_error_action(CUEA_IGNORE);
	CU_set_test_complete_handler(tap_on_test_complete);
	CU_set_suite_init_failure_handler(tap_on_suite_init_failure);
	CU_set_suite_cleanup_failure_handler(tap_on_suite_cleanup_failure);
	if (CU_run_all_tests() != CUE_SUCCESS && tap_failed == 0) {
		/* The framework itself failed (no test reported why). */
		tap_count++;
		tap_failed++;
		printf("not ok %u - runner: %s\n", tap_count,
		    CU_get_error_msg());
	}
	printf("1..%u\n", tap_count);
	fflush(stdout);
	CU_cleanup_registry();
	return tap_failed == 0 ? 0 : 1;
}
