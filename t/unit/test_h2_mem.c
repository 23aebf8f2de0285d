/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/h2_mem.c with a real nghttp2 server session made through it, as
 * h2_start makes one: what an idle connection gives back to the kernel
 * (the frame buffer's pages, and the stream map's page while no stream is
 * in it) and what it must keep (that page while a stream is: the session
 * still finds the stream afterwards). Residency is read with mincore, so
 * the checks look at memory the kernel holds, not at our bookkeeping.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "t/unit/check.h"
#include "t/unit/suites.h"

#ifdef HAVE_NGHTTP2
#include "worker/h2_conn.h"

static struct h2_conn	 mem_h2;

static void
mem_session(void)
{
	nghttp2_session_callbacks	*cb;
	int				 rv;

	memset(&mem_h2, 0, sizeof(mem_h2));
	h2_mem_init(&mem_h2);
	CU_ASSERT_FATAL(nghttp2_session_callbacks_new(&cb) == 0);
	mem_h2.mem_creating = true;
	rv = nghttp2_session_server_new3(&mem_h2.session, cb, &mem_h2, NULL,
	    &mem_h2.mem);
	mem_h2.mem_creating = false;
	nghttp2_session_callbacks_del(cb);
	CU_ASSERT_FATAL(rv == 0);
}

static void
mem_session_end(void)
{
	nghttp2_session_del(mem_h2.session);
	h2_mem_fini(&mem_h2);
}

/* The index in mem_h2.big of the mapping whose length is in [lo, hi). */
static int
mem_big(uint32_t lo, uint32_t hi)
{
	int	 i, found = -1;

	for (i = 0; i < H2_BIG_MAX; i++)
		if (mem_h2.big[i] != NULL && mem_h2.big_len[i] >= lo &&
		    mem_h2.big_len[i] < hi) {
			CHECKF(found < 0, "two mappings of %u to %u bytes",
			    lo, hi);
			found = i;
		}
	return found;
}

/* How many of mapping i's pages the kernel holds. */
static unsigned
mem_resident(int i)
{
	unsigned char	 in[64];
	size_t		 page = (size_t)sysconf(_SC_PAGESIZE), j;
	unsigned	 n = 0;

	CU_ASSERT_FATAL(mem_h2.big_len[i] <= sizeof(in) * page);
	CU_ASSERT_FATAL(mincore(mem_h2.big[i], mem_h2.big_len[i], in) == 0);
	for (j = 0; j * page < mem_h2.big_len[i]; j++)
		n += in[j] & 1;
	return n;
}

/* nghttp2 serializes its queued frames (our SETTINGS) into the frame
 * buffer; they are thrown away here. */
static void
mem_send_all(void)
{
	const uint8_t	*data;

	while (nghttp2_session_mem_send(mem_h2.session, &data) > 0)
		;
	mem_h2.big_idle = false;
}

static void
test_h2_mem_gives_back_the_frame_buffer_and_an_empty_map(void)
{
	int	 fb, map;

	mem_session();
	fb = mem_big(16384, UINT32_MAX);
	map = mem_big(4096, 16384);
	/* (With pages over 4 KiB the map stays malloc's.) */
	CHECKF_FATAL(fb >= 0 && (map >= 0 || sysconf(_SC_PAGESIZE) > 4096),
	    "the session's frame buffer (%d) and stream map (%d) have "
	    "mappings of their own", fb, map);
	CU_ASSERT(nghttp2_submit_settings(mem_h2.session, NGHTTP2_FLAG_NONE,
	    NULL, 0) == 0);
	mem_send_all();
	CHECKF(mem_resident(fb) >= 1, "the frame buffer was written: %u "
	    "pages in memory", mem_resident(fb));
	/* The empty map's page, in memory as a store would put it. */
	if (map >= 0) {
		memset(mem_h2.big[map], 0, mem_h2.big_len[map]);
		CU_ASSERT(mem_resident(map) >= 1);
	}
	h2_mem_idle(&mem_h2);
	CHECKF(mem_resident(fb) == 0, "idle: %u frame buffer pages left",
	    mem_resident(fb));
	CHECKF(map < 0 || mem_resident(map) == 0, "idle with no stream: %u "
	    "map pages left", map < 0 ? 0 : mem_resident(map));
	/* Given back means zero-filled on the next touch, which is what the
	 * empty map held. */
	CU_ASSERT(nghttp2_session_find_stream(mem_h2.session, 1) == NULL);
	mem_session_end();
}

static void
test_h2_mem_keeps_a_map_that_holds_a_stream(void)
{
	static const char	 preface[] = NGHTTP2_CLIENT_MAGIC;
	/* An empty SETTINGS, then HEADERS opening stream 1 (END_HEADERS):
	 * GET http://a/ as static-table indices and one literal. */
	static const uint8_t	 frames[] = {
		0, 0, 0, 4, 0, 0, 0, 0, 0,
		0, 0, 6, 1, 4, 0, 0, 0, 1,
		0x82, 0x86, 0x84, 0x41, 0x01, 'a',
	};
	int			 map;

	mem_session();
	if ((map = mem_big(4096, 16384)) < 0) {
		/* Pages over 4 KiB: the map is malloc's, nothing to see. */
		CU_ASSERT(sysconf(_SC_PAGESIZE) > 4096);
		mem_session_end();
		return;
	}
	CU_ASSERT_FATAL(nghttp2_session_mem_recv(mem_h2.session,
	    (const uint8_t *)preface, sizeof(preface) - 1) ==
	    (ssize_t)(sizeof(preface) - 1));
	CU_ASSERT_FATAL(nghttp2_session_mem_recv(mem_h2.session, frames,
	    sizeof(frames)) == (ssize_t)sizeof(frames));
	CU_ASSERT_FATAL(nghttp2_session_find_stream(mem_h2.session, 1) !=
	    NULL);
	mem_send_all();
	h2_mem_idle(&mem_h2);
	CHECKF(mem_resident(map) >= 1, "the map's page holds stream 1 and "
	    "stays in memory (%u pages)", mem_resident(map));
	CU_ASSERT(nghttp2_session_find_stream(mem_h2.session, 1) != NULL);
	mem_session_end();
}
#endif

void
register_h2_mem_suite(void)
{
#ifdef HAVE_NGHTTP2
	CU_pSuite	 s;

	if ((s = CU_add_suite("h2_mem", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "gives_back_the_frame_buffer_and_an_empty_map",
	    test_h2_mem_gives_back_the_frame_buffer_and_an_empty_map);
	CU_add_test(s, "keeps_a_map_that_holds_a_stream",
	    test_h2_mem_keeps_a_map_that_holds_a_stream);
#endif
}
