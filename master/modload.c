/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Module loading. The master dlopen()s each module before forking so every
 * worker inherits it mapped and initialised; workers never dlopen. A module
 * is checked before any of its code runs: it must export pt_module_<name>
 * with our ABI major, a minor no newer than ours, and our build signature.
 * Modules stay loaded until the master exits: a reload reruns conf() only.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/modload.h"

static struct modload	*modload_list[MODLOAD_MAX];
static int		 modload_count;
static char		 modload_errbuf[4608];

static struct modload *
modload_find(const char *name)
{
	int	 i;

	for (i = 0; i < modload_count; i++)
		if (strcmp(modload_list[i]->name, name) == 0)
			return modload_list[i];
	return NULL;
}

static const char *
modload_check(const struct pt_module *m, const char *name)
{
	if (m->abi_major != PT_ABI_MAJOR || m->abi_minor > PT_ABI_MINOR) {
		snprintf(modload_errbuf, sizeof(modload_errbuf),
		    "ABI version %u.%u, this portico needs %u.x (x <= %u): "
		    "rebuild the module", m->abi_major, m->abi_minor,
		    PT_ABI_MAJOR, PT_ABI_MINOR);
		return modload_errbuf;
	}
	if (m->build_sig != PT_BUILD_SIG)
		return "built against other portico headers: rebuild the module";
	if (m->name == NULL || strcmp(m->name, name) != 0)
		return "descriptor names another module";
	return NULL;
}

struct modload *
modload_open(const char *name, const char *path, const char *dir,
    const char **errstr)
{
	struct modload		*ml;
	const struct pt_module	*m;
	char			 file[4096], sym[128];
	void			*h;
	const char		*why;

	if (path != NULL)
		snprintf(file, sizeof(file), "%s", path);
	else
		snprintf(file, sizeof(file), "%s/%s.so", dir, name);
	if ((ml = modload_find(name)) != NULL) {
		/* Code cannot be swapped under running workers: a module
		 * stays what it was at start-up until a restart. */
		if (strcmp(ml->path, file) != 0) {
			snprintf(modload_errbuf, sizeof(modload_errbuf),
			    "already loaded from %s; loading it from %s needs "
			    "a restart", ml->path, file);
			*errstr = modload_errbuf;
			return NULL;
		}
		return ml;
	}
	if (modload_count == MODLOAD_MAX) {
		*errstr = "too many modules";
		return NULL;
	}
	if ((h = dlopen(file, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(modload_errbuf, sizeof(modload_errbuf),
		    "cannot load: %s", dlerror());
		*errstr = modload_errbuf;
		return NULL;
	}
	snprintf(sym, sizeof(sym), "pt_module_%s", name);
	if ((m = dlsym(h, sym)) == NULL) {
		snprintf(modload_errbuf, sizeof(modload_errbuf),
		    "%s does not export %s: not a portico module", file, sym);
		*errstr = modload_errbuf;
		dlclose(h);
		return NULL;
	}
	if ((why = modload_check(m, name)) != NULL) {
		if (why != modload_errbuf)
			snprintf(modload_errbuf, sizeof(modload_errbuf),
			    "%s", why);
		*errstr = modload_errbuf;
		dlclose(h);
		return NULL;
	}
	if ((ml = calloc(1, sizeof(*ml))) == NULL ||
	    (ml->name = strdup(name)) == NULL ||
	    (ml->path = strdup(file)) == NULL) {
		if (ml != NULL)
			free(ml->name);
		free(ml);
		dlclose(h);
		*errstr = "out of memory";
		return NULL;
	}
	ml->handle = h;
	ml->mod = m;
	ml->index = modload_count;
	modload_list[modload_count++] = ml;
	return ml;
}

int
modload_all(struct modload ***all_out)
{
	*all_out = modload_list;
	return modload_count;
}

void
modload_close_all(void)
{
	int	 i;

	for (i = modload_count - 1; i >= 0; i--) {
		dlclose(modload_list[i]->handle);
		free(modload_list[i]->name);
		free(modload_list[i]->path);
		free(modload_list[i]);
	}
	modload_count = 0;
}
