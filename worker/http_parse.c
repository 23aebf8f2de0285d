/* SPDX-License-Identifier: BSD-2-Clause */
/* Being written: see worker/http_parse.h. */
#include "config.h"

#include "worker/http_parse.h"
