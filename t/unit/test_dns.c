/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for worker/dns.c. */
#include "config.h"

#include <CUnit/CUnit.h>

#include "t/unit/suites.h"
#include "worker/dns.h"

void
register_dns_suite(void)
{
	CU_pSuite	 s = CU_add_suite("dns", NULL, NULL);

	(void)s;
}
