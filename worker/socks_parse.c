/* SPDX-License-Identifier: BSD-2-Clause */
/* Being written: see worker/socks_parse.h. */
#include "config.h"

#include "worker/socks_parse.h"
