/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The module phase runner. For every phase it keeps the configured
 * modules' hooks sorted by priority, and walks them for one connection,
 * stopping at the first ALLOW, DENY or ERROR. A hook that answers AGAIN
 * parks the connection; pt_conn_resume() picks the walk up where it
 * stopped. What a verdict means on the wire is decided by the caller's
 * <done> callback, never here.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "worker/phase.h"
#include "common/log.h"
#include "common/conf_types.h"

/* conf.c refuses configurations with more hooks in a phase. */
#define PHASE_MAX_HOOKS	MODLOAD_MAX_HOOKS

struct phase_hook {
	pt_hook_fn		 fn;
	int			 priority;
	void			*modctx;	/* the module's conf() result */
	uint32_t		 mod_bit;	/* in conf_listener.mod_skip */
};

struct phase_mod {
	const struct pt_module	*mod;
	size_t			 offset;	/* into pt_conn.c_modctx */
};

static struct phase_hook	phase_hooks[PT_PHASE_COUNT][PHASE_MAX_HOOKS];
static int			phase_nhooks[PT_PHASE_COUNT];
static struct phase_mod		phase_mods[MODLOAD_MAX];
static int			phase_nmods;
/* A module has PT_MODF_LOG_HEADERS (http.c keeps User-Agent, Referer). */
static bool			phase_log_hdrs;
/* The modules' datagram callbacks, in configuration order. */
static struct phase_dgram {
	pt_datagram_fn		 fn;
	void			*modctx;
	uint32_t		 mod_bit;
}				phase_dgrams[MODLOAD_MAX];
static int			phase_ndgrams;

static void
phase_add(enum pt_phase p, pt_hook_fn fn, int priority, void *modctx,
    uint32_t mod_bit)
{
	struct phase_hook	*h = phase_hooks[p];
	int			 i;

	if (phase_nhooks[p] == PHASE_MAX_HOOKS) {
		pt_log(PT_LOG_WARNING, "too many hooks in phase %d", (int)p);
		return;
	}
	/* Insertion keeps equal priorities in configuration order. */
	for (i = phase_nhooks[p]; i > 0 && h[i - 1].priority > priority; i--)
		h[i] = h[i - 1];
	h[i].fn = fn;
	h[i].priority = priority;
	h[i].modctx = modctx;
	h[i].mod_bit = mod_bit;
	phase_nhooks[p]++;
}

size_t
phase_init(const struct pt_config *conf)
{
	const struct pt_module	*m;
	const struct pt_hook	*h;
	size_t			 total = 0;
	int			 i;

	phase_fini();
	for (i = 0; i < conf->nmodules; i++) {
		m = conf->modules[i].mod->mod;
		phase_mods[phase_nmods].mod = m;
		phase_mods[phase_nmods].offset = total;
		phase_nmods++;
		total += (m->conn_ctx_size + 15) & ~(size_t)15;
		if (m->abi_minor >= 4 && (m->flags & PT_MODF_LOG_HEADERS))
			phase_log_hdrs = true;
		if (m->abi_minor >= 3 && m->datagram != NULL) {
			phase_dgrams[phase_ndgrams].fn = m->datagram;
			phase_dgrams[phase_ndgrams].modctx =
			    conf->modules[i].ctx;
			phase_dgrams[phase_ndgrams].mod_bit = (uint32_t)1 << i;
			phase_ndgrams++;
		}
		for (h = m->hooks; h != NULL && h->fn != NULL; h++)
			if ((unsigned)h->phase < PT_PHASE_COUNT)
				phase_add(h->phase, h->fn, h->priority,
				    conf->modules[i].ctx, (uint32_t)1 << i);
	}
	return total;
}

void
phase_fini(void)
{
	memset(phase_nhooks, 0, sizeof(phase_nhooks));
	phase_nmods = 0;
	phase_ndgrams = 0;
	phase_log_hdrs = false;
}

bool
phase_has_hooks(enum pt_phase phase)
{
	return phase_nhooks[phase] > 0;
}

bool
phase_applies(const struct pt_conn *c, enum pt_phase phase)
{
	int	 i;

	for (i = 0; i < phase_nhooks[phase]; i++)
		if (!(c->c_mod_skip & phase_hooks[phase][i].mod_bit))
			return true;
	return false;
}

bool
phase_any_hooks(void)
{
	return phase_nmods > 0;
}

bool
phase_log_headers(void)
{
	return phase_log_hdrs;
}

void *
pt_conn_ctx(struct pt_conn *c, const struct pt_module *mod)
{
	int	 i;

	for (i = 0; i < phase_nmods; i++)
		if (phase_mods[i].mod == mod)
			return c->c_modctx + phase_mods[i].offset;
	return NULL;
}

void *
pt_conn_listener_ctx(struct pt_conn *c, const struct pt_module *mod)
{
	void	**lctx = c->c_listener->mod_lctx;
	int	  i;

	if (lctx == NULL)
		return NULL;
	/* phase_mods follows the configuration's module order. */
	for (i = 0; i < phase_nmods; i++)
		if (phase_mods[i].mod == mod)
			return lctx[i];
	return NULL;
}

void
pt_conn_need_credentials(struct pt_conn *c, bool need)
{
	c->c_need_creds = need;
}

static void
phase_finish(struct pt_conn *c, enum pt_verdict v)
{
	conn_phase_done_fn	 done = c->c_phase_done;

	c->c_phase_done = NULL;
	if (done != NULL)
		done(c, v);
}

/* Walks the hooks of c->c_phase from c->c_hook on. */
static void
phase_walk(struct pt_conn *c)
{
	const struct phase_hook	*h;
	enum pt_phase		 p = c->c_phase;
	enum pt_verdict		 v;

	while (c->c_hook < phase_nhooks[p]) {
		h = &phase_hooks[p][c->c_hook];
		/* A module that does not apply to the listener. */
		if (c->c_mod_skip & h->mod_bit) {
			c->c_hook++;
			continue;
		}
		v = h->fn(c, &c->c_req, h->modctx);
		switch (v) {
		case PT_VERDICT_CONTINUE:
			c->c_hook++;
			break;
		case PT_VERDICT_AGAIN:
			if (p == PT_PHASE_LOG || p == PT_PHASE_CLOSE) {
				c->c_hook++;
				break;
			}
			c->c_waiting = true;
			c->c_waited = true;
			return;
		case PT_VERDICT_ALLOW:
		case PT_VERDICT_DENY:
		case PT_VERDICT_ERROR:
			/* Every module releases its state at CLOSE: one
			 * hook's verdict must not skip the others'. */
			if (p == PT_PHASE_CLOSE) {
				c->c_hook++;
				break;
			}
			phase_finish(c, v);
			return;
		default:
			pt_clog(c, PT_LOG_ERR, "module hook returned %d", (int)v);
			phase_finish(c, PT_VERDICT_ERROR);
			return;
		}
	}
	phase_finish(c, PT_VERDICT_CONTINUE);
}

void
phase_run(struct pt_conn *c, enum pt_phase phase, conn_phase_done_fn done)
{
	c->c_phase = phase;
	c->c_hook = 0;
	c->c_phase_done = done;
	/* An answer a module set is for the verdict that ends its phase. */
	memset(&c->c_answer, 0, sizeof(c->c_answer));
	if (phase_nhooks[phase] == 0) {
		phase_finish(c, PT_VERDICT_CONTINUE);
		return;
	}
	phase_walk(c);
}

void
pt_conn_resume(struct pt_conn *c, enum pt_verdict v)
{
	if (!c->c_waiting) {
		pt_clog(c, PT_LOG_ERR, "pt_conn_resume without AGAIN: ignored");
		return;
	}
	c->c_waiting = false;
	/* The client went away while the module worked: the connection is
	 * closed and only its memory was kept for this call. */
	if (c->c_state == CONN_CLOSED) {
		conn_release_waiting(c);
		return;
	}
	if (v == PT_VERDICT_CONTINUE || v == PT_VERDICT_AGAIN) {
		c->c_hook++;
		phase_walk(c);
	} else {
		phase_finish(c, v);
	}
}

enum pt_verdict
phase_run_now(struct pt_conn *c, enum pt_phase phase)
{
	const struct phase_hook	*h;
	enum pt_phase		 saved_phase = c->c_phase;
	int			 saved_hook = c->c_hook, i;
	enum pt_verdict		 v = PT_VERDICT_CONTINUE;

	/* c_phase is what phase-bound calls (pt_req_header) look at. */
	c->c_phase = phase;
	for (i = 0; i < phase_nhooks[phase]; i++) {
		h = &phase_hooks[phase][i];
		/* A module that does not apply to the listener. */
		if (c->c_mod_skip & h->mod_bit)
			continue;
		c->c_hook = i;
		v = h->fn(c, &c->c_req, h->modctx);
		if (v == PT_VERDICT_CONTINUE)
			continue;
		if (v == PT_VERDICT_AGAIN)
			/* Nothing can wait here: a datagram is not kept
			 * while a module thinks. */
			v = PT_VERDICT_DENY;
		else if (v != PT_VERDICT_ALLOW && v != PT_VERDICT_DENY &&
		    v != PT_VERDICT_ERROR) {
			pt_clog(c, PT_LOG_ERR, "module hook returned %d",
			    (int)v);
			v = PT_VERDICT_ERROR;
		}
		break;
	}
	c->c_phase = saved_phase;
	c->c_hook = saved_hook;
	return v;
}

bool
phase_datagram_applies(const struct pt_conn *c)
{
	int	 i;

	for (i = 0; i < phase_ndgrams; i++)
		if (!(c->c_mod_skip & phase_dgrams[i].mod_bit))
			return true;
	return false;
}

bool
phase_datagram_run(struct pt_conn *c, enum pt_dir dir, size_t len)
{
	const struct phase_dgram	*d;
	enum pt_verdict			 v;
	int				 i;

	for (i = 0; i < phase_ndgrams; i++) {
		d = &phase_dgrams[i];
		if (c->c_mod_skip & d->mod_bit)
			continue;
		v = d->fn(c, dir, len, d->modctx);
		if (v == PT_VERDICT_CONTINUE)
			continue;
		/* ALLOW lets it through; everything else drops it. */
		return v == PT_VERDICT_ALLOW;
	}
	return true;
}
