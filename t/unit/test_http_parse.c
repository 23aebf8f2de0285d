/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for worker/http_parse.c. */
#include "config.h"

#include <CUnit/CUnit.h>

#include "t/unit/suites.h"
#include "worker/http_parse.h"

void
register_http_parse_suite(void)
{
	CU_pSuite	 s = CU_add_suite("http_parse", NULL, NULL);

	(void)s;
}
