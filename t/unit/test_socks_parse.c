/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for worker/socks_parse.c. */
#include "config.h"

#include <CUnit/CUnit.h>

#include "t/unit/suites.h"
#include "worker/socks_parse.h"

void
register_socks_parse_suite(void)
{
	CU_pSuite	 s = CU_add_suite("socks_parse", NULL, NULL);

	(void)s;
}
