/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A heap allocation counter for tests, loaded with LD_PRELOAD into the
 * real portico binary: it counts from outside the code under test, so the
 * code cannot forget to report an allocation.
 *
 * With PT_ALLOCCOUNT_DIR set, every process (the master, and each worker
 * after fork) maps the file <dir>/<pid> and counts there with relaxed
 * atomics; a test reads the file at any moment without signalling the
 * process (struct ac_shared below, little-endian uint64 words). Without
 * the variable it only forwards to the real allocator.
 *
 * Two ways to see allocations:
 * - plain build: this library defines malloc, calloc, realloc, free and
 *   the aligned family, counts, and forwards to the next definition
 *   (glibc's), found with dlsym(RTLD_NEXT). glibc's own internal uses
 *   (strdup, fopen, qsort, ...) go through these symbols too. dlsym may
 *   itself allocate before the real functions are known: those few
 *   requests come from a static bootstrap buffer and are never freed.
 * - sanitizer build: AddressSanitizer owns malloc and must come first in
 *   LD_PRELOAD, so the definitions here are never reached; instead the
 *   constructor installs __sanitizer_install_malloc_and_free_hooks, found
 *   with dlsym so that this library links in both builds.
 *
 * With PT_ALLOCCOUNT_TRACE=1 the callers (up to AC_DEPTH return addresses,
 * through the unwinder) of the last AC_RING allocations are kept in the
 * file too, so a test can say where an allocation it did not expect came
 * from. Not thread-safe beyond the counters; portico's processes are
 * single-threaded.
 *
 * This file is a test helper: never installed, never linked into portico.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <unwind.h>

#define AC_EXPORT	__attribute__((visibility("default")))
#define AC_MAGIC	0x31434f4c4c415450ULL	/* "PTALLOC1" */
#define AC_RING		64
#define AC_DEPTH	8
#define AC_BOOT_SIZE	(64 * 1024)

enum ac_kind {
	AC_MALLOC = 0,
	AC_CALLOC,
	AC_REALLOC,
	AC_ALIGNED,	/* posix_memalign, aligned_alloc, memalign, valloc */
	AC_SANITIZER,	/* through the sanitizer's hook: kind unknown */
	AC_KINDS
};

/* The file's layout; t/integ/allocs.py reads it with the same offsets. */
struct ac_shared {
	uint64_t	 magic;
	uint64_t	 pid;
	uint64_t	 total;		/* allocations of every kind */
	uint64_t	 frees;
	uint64_t	 kind[AC_KINDS];
	uint64_t	 ring_next;	/* allocations traced so far */
	uint64_t	 ring_size[AC_RING];
	uint64_t	 ring[AC_RING][AC_DEPTH];
};

static void	*(*ac_real_malloc)(size_t);
static void	*(*ac_real_calloc)(size_t, size_t);
static void	*(*ac_real_realloc)(void *, size_t);
static void	 (*ac_real_free)(void *);
static int	 (*ac_real_posix_memalign)(void **, size_t, size_t);
static void	*(*ac_real_aligned_alloc)(size_t, size_t);
static void	*(*ac_real_memalign)(size_t, size_t);
static void	*(*ac_real_valloc)(size_t);
static void	*(*ac_real_pvalloc)(size_t);

static struct ac_shared	*ac_shm;
static bool		 ac_trace;
static bool		 ac_resolving;
/* Inside the unwinder: what it allocates is not counted. */
static __thread bool	 ac_busy;

static _Alignas(64) char	 ac_boot[AC_BOOT_SIZE];
static size_t			 ac_boot_used;

/* ---- the shared file --------------------------------------------------- */

static size_t
ac_fmt_uint(char *out, unsigned long v)
{
	char	 tmp[24];
	size_t	 n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

/* Maps <dir>/<pid> for this process. Only system calls: no allocation,
 * no stdio, since this runs from inside malloc's callers' world. */
static void
ac_map(void)
{
	const char	*dir = getenv("PT_ALLOCCOUNT_DIR");
	char		 path[4096];
	size_t		 len;
	pid_t		 pid = getpid();
	void		*m;
	int		 fd;

	if (dir == NULL || *dir == '\0')
		return;
	len = strlen(dir);
	if (len + 24 > sizeof(path))
		return;
	memcpy(path, dir, len);
	path[len++] = '/';
	len += ac_fmt_uint(path + len, (unsigned long)pid);
	path[len] = '\0';
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (ftruncate(fd, (off_t)sizeof(struct ac_shared)) < 0) {
		close(fd);
		return;
	}
	m = mmap(NULL, sizeof(struct ac_shared), PROT_READ | PROT_WRITE,
	    MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return;
	ac_shm = m;
	ac_shm->pid = (uint64_t)pid;
	__atomic_store_n(&ac_shm->magic, AC_MAGIC, __ATOMIC_RELEASE);
}

/* In a forked child: its own file, so each worker counts its own. The
 * parent's mapping is left mapped (unused) rather than unmapped, in case
 * some other atfork handler allocates before this one ran. */
static void
ac_on_fork_child(void)
{
	ac_shm = NULL;
	ac_map();
}

/* ---- tracing ----------------------------------------------------------- */

struct ac_walk {
	uint64_t	*out;
	int		 n;
	int		 skip;
};

static _Unwind_Reason_Code
ac_on_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct ac_walk	*w = arg;

	if (w->skip > 0) {
		w->skip--;
		return _URC_NO_REASON;
	}
	w->out[w->n++] = (uint64_t)_Unwind_GetIP(ctx);
	return w->n >= AC_DEPTH ? _URC_END_OF_STACK : _URC_NO_REASON;
}

static void
ac_record(size_t size)
{
	struct ac_walk	 w;
	uint64_t	 i;

	if (!ac_trace || ac_busy)
		return;
	ac_busy = true;
	i = ac_shm->ring_next % AC_RING;
	memset(ac_shm->ring[i], 0, sizeof(ac_shm->ring[i]));
	ac_shm->ring_size[i] = size;
	w.out = ac_shm->ring[i];
	w.n = 0;
	w.skip = 0;	/* the test drops this library's own frames */
	_Unwind_Backtrace(ac_on_frame, &w);
	__atomic_store_n(&ac_shm->ring_next, ac_shm->ring_next + 1,
	    __ATOMIC_RELEASE);
	ac_busy = false;
}

static void
ac_count(enum ac_kind kind, size_t size)
{
	if (ac_shm == NULL || ac_busy)
		return;
	__atomic_fetch_add(&ac_shm->kind[kind], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&ac_shm->total, 1, __ATOMIC_RELAXED);
	ac_record(size);
}

static void
ac_count_free(void)
{
	if (ac_shm != NULL && !ac_busy)
		__atomic_fetch_add(&ac_shm->frees, 1, __ATOMIC_RELAXED);
}

/* ---- the sanitizer's hooks ---------------------------------------------- */

static void
ac_san_malloc_hook(const volatile void *ptr, size_t size)
{
	(void)ptr;
	ac_count(AC_SANITIZER, size);
}

static void
ac_san_free_hook(const volatile void *ptr)
{
	(void)ptr;
	ac_count_free();
}

/* ---- the real allocator ------------------------------------------------ */

static void
ac_resolve(void)
{
	if (ac_real_malloc != NULL || ac_resolving)
		return;
	ac_resolving = true;
	ac_real_calloc = dlsym(RTLD_NEXT, "calloc");
	ac_real_realloc = dlsym(RTLD_NEXT, "realloc");
	ac_real_free = dlsym(RTLD_NEXT, "free");
	ac_real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	ac_real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	ac_real_memalign = dlsym(RTLD_NEXT, "memalign");
	ac_real_valloc = dlsym(RTLD_NEXT, "valloc");
	ac_real_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
	/* Last: its being set says all are. */
	ac_real_malloc = dlsym(RTLD_NEXT, "malloc");
	ac_resolving = false;
}

/* Memory for dlsym's own requests, before the real malloc is known. */
static void *
ac_boot_alloc(size_t size)
{
	size_t	 need = (size + 15) & ~(size_t)15;
	void	*p;

	if (need > AC_BOOT_SIZE - ac_boot_used)
		return NULL;
	p = ac_boot + ac_boot_used;
	ac_boot_used += need;
	return p;
}

static bool
ac_is_boot(const void *p)
{
	return (const char *)p >= ac_boot &&
	    (const char *)p < ac_boot + AC_BOOT_SIZE;
}

__attribute__((constructor)) static void
ac_init(void)
{
	void	(*install)(void (*)(const volatile void *, size_t),
		    void (*)(const volatile void *));
	const char	*tr = getenv("PT_ALLOCCOUNT_TRACE");

	ac_resolve();
	ac_trace = tr != NULL && *tr == '1';
	*(void **)&install = dlsym(RTLD_DEFAULT,
	    "__sanitizer_install_malloc_and_free_hooks");
	if (install != NULL)
		install(ac_san_malloc_hook, ac_san_free_hook);
	pthread_atfork(NULL, NULL, ac_on_fork_child);
	ac_map();
}

/* ---- the interposed functions (plain build) ---------------------------- */

AC_EXPORT void *
malloc(size_t size)
{
	void	*p;

	ac_resolve();
	if (ac_real_malloc == NULL)
		return ac_boot_alloc(size);
	p = ac_real_malloc(size);
	ac_count(AC_MALLOC, size);
	return p;
}

AC_EXPORT void *
calloc(size_t n, size_t size)
{
	void	*p;

	ac_resolve();
	if (ac_real_malloc == NULL) {
		/* The bootstrap buffer is static, so already zeroed. */
		if (size != 0 && n > SIZE_MAX / size)
			return NULL;
		return ac_boot_alloc(n * size);
	}
	p = ac_real_calloc(n, size);
	ac_count(AC_CALLOC, n * size);
	return p;
}

AC_EXPORT void *
realloc(void *old, size_t size)
{
	void	*p;

	ac_resolve();
	if (ac_real_malloc == NULL)
		return NULL;
	if (ac_is_boot(old)) {
		/* The old size is unknown; copying what fits is enough for
		 * the few bytes dlsym may have asked for. */
		if ((p = malloc(size)) != NULL)
			memcpy(p, old, size < (size_t)(ac_boot + AC_BOOT_SIZE -
			    (char *)old) ? size : (size_t)(ac_boot +
			    AC_BOOT_SIZE - (char *)old));
		return p;
	}
	p = ac_real_realloc(old, size);
	if (size != 0)
		ac_count(AC_REALLOC, size);
	else
		ac_count_free();
	return p;
}

AC_EXPORT void *
reallocarray(void *old, size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(old, n * size);
}

AC_EXPORT void
free(void *p)
{
	if (p == NULL || ac_is_boot(p))
		return;
	ac_resolve();
	if (ac_real_free == NULL)
		return;
	ac_real_free(p);
	ac_count_free();
}

AC_EXPORT int
posix_memalign(void **out, size_t align, size_t size)
{
	int	 rc;

	ac_resolve();
	if (ac_real_posix_memalign == NULL)
		return ENOMEM;
	rc = ac_real_posix_memalign(out, align, size);
	ac_count(AC_ALIGNED, size);
	return rc;
}

AC_EXPORT void *
aligned_alloc(size_t align, size_t size)
{
	void	*p;

	ac_resolve();
	if (ac_real_aligned_alloc == NULL)
		return NULL;
	p = ac_real_aligned_alloc(align, size);
	ac_count(AC_ALIGNED, size);
	return p;
}

AC_EXPORT void *
memalign(size_t align, size_t size)
{
	void	*p;

	ac_resolve();
	if (ac_real_memalign == NULL)
		return NULL;
	p = ac_real_memalign(align, size);
	ac_count(AC_ALIGNED, size);
	return p;
}

AC_EXPORT void *
valloc(size_t size)
{
	void	*p;

	ac_resolve();
	if (ac_real_valloc == NULL)
		return NULL;
	p = ac_real_valloc(size);
	ac_count(AC_ALIGNED, size);
	return p;
}

AC_EXPORT void *
pvalloc(size_t size)
{
	void	*p;

	ac_resolve();
	if (ac_real_pvalloc == NULL)
		return NULL;
	p = ac_real_pvalloc(size);
	ac_count(AC_ALIGNED, size);
	return p;
}
