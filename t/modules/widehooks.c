/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Test-only module with hooks no worker table can take, to prove the
 * master refuses them at load (master/conf.c) instead of every worker
 * dropping some with a warning. Two descriptors, loaded by path under
 * either name:
 *
 *	widehooks	MODLOAD_MAX_HOOKS + 1 (65) ACCESS hooks
 *	oddphase	one hook for a phase after the last one
 *
 * Neither is ever run: the configuration that names them is refused.
 */
#include "portico/module.h"

#define WIDEHOOKS_N	65

static enum pt_verdict
widehooks_pass(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	(void)conn;
	(void)req;
	(void)modctx;
	return PT_VERDICT_CONTINUE;
}

#define WIDE(p)		{ PT_PHASE_ACCESS, (p), widehooks_pass }
#define WIDE8(p)	WIDE(p), WIDE(p), WIDE(p), WIDE(p),		\
			WIDE(p), WIDE(p), WIDE(p), WIDE(p)

static const struct pt_hook widehooks_hooks[WIDEHOOKS_N + 1] = {
	WIDE8(0), WIDE8(1), WIDE8(2), WIDE8(3),
	WIDE8(4), WIDE8(5), WIDE8(6), WIDE8(7),
	WIDE(8),
	{ 0, 0, NULL }
};

static const struct pt_hook oddphase_hooks[] = {
	{ PT_PHASE_LOG, 0, widehooks_pass },
	{ PT_PHASE_COUNT, 0, widehooks_pass },
	{ 0, 0, NULL }
};

PT_API const struct pt_module pt_module_widehooks = {
	.abi_major = PT_ABI_MAJOR,
	.abi_minor = PT_ABI_MINOR,
	.build_sig = PT_BUILD_SIG,
	.name = "widehooks",
	.hooks = widehooks_hooks,
};

PT_API const struct pt_module pt_module_oddphase = {
	.abi_major = PT_ABI_MAJOR,
	.abi_minor = PT_ABI_MINOR,
	.build_sig = PT_BUILD_SIG,
	.name = "oddphase",
	.hooks = oddphase_hooks,
};
