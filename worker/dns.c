/* SPDX-License-Identifier: BSD-2-Clause */
/* Being written: see worker/dns.h. */
#include "config.h"

#include "worker/dns.h"
