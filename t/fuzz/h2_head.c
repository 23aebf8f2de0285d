/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: HTTP/2 requests to the HTTP/1.1 head the rest of portico
 * reads (worker/h2_head.c). The input is what a client sends after its
 * preface and an empty SETTINGS (both put in front here, so the fuzzer
 * spends nothing finding them): frames for a real nghttp2 server session
 * set up as worker/h2.c sets it up, whose callbacks hand every request
 * field to h2_head_field and every end of HEADERS to h2_head_finish, as
 * h2.c does. For every head this completes:
 *
 * - the HTTP/1.1 parser (worker/http_parse.c) finds one whole head in it
 *   (never "need more"), and, when it accepts it, ends it where it ends:
 *   nothing after it, so no second request can hide in a field;
 * - each line is one field: the parser's field count is the number of
 *   lines less the request line and the blank one, so no value made a
 *   line of its own;
 * - the request line is the one the pseudo-fields make: the method is
 *   the client's :method (GET for an RFC 8441 upgrade), and a CONNECT's
 *   target is its :authority.
 *
 * A head held for its body (no length, no END_STREAM yet) is completed
 * both ways by the input's choice, as the next frame would decide.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "common/conf_types.h"
#include "worker/buf.h"
#include "worker/h2.h"
#include "worker/h2_conn.h"
#include "worker/http_parse.h"
#include "t/fuzz/fuzz.h"

#define FUZZ_MAX_HEAD	16384

static struct pt_config		 fuzz_conf;
static nghttp2_session_callbacks *fuzz_cb;
static nghttp2_option		*fuzz_opt;
static struct http_msg		 fuzz_msg;
static uint64_t			 fuzz_seed;
/* Every stream state alive, for the session's end. */
static struct fuzz_stream	*fuzz_streams;

/* What h2_head.c reads of the configuration. */
const struct pt_config *
h2_conf(void)
{
	return &fuzz_conf;
}

/* h2_head_response names it as a response's DATA source; no response is
 * submitted here, so nghttp2 never calls it. */
ssize_t
h2_stream_read_body(nghttp2_session *s, int32_t id, uint8_t *buf,
    size_t len, uint32_t *flags, nghttp2_data_source *src, void *arg)
{
	(void)s; (void)id; (void)buf; (void)len; (void)flags; (void)src;
	(void)arg;
	return NGHTTP2_ERR_DEFERRED;
}

/* The stream state h2_head.c writes into, and what the client said. */
struct fuzz_stream {
	struct h2_stream	 st;
	struct fuzz_stream	*prev, *next;	/* fuzz_streams */
	char			 method[64];
	char			 authority[300];
	size_t			 method_len, authority_len;
	bool			 protocol;
};

static void
fuzz_keep(char *dst, size_t cap, size_t *len, nghttp2_rcbuf *rc)
{
	nghttp2_vec	 v = nghttp2_rcbuf_get_buf(rc);

	*len = v.len < cap ? v.len : cap;
	memcpy(dst, v.base, *len);
}

static void
fuzz_check_head(const struct fuzz_stream *fs)
{
	const struct h2_stream	*st = &fs->st;
	struct http_msg		*m = &fuzz_msg;
	size_t			 lines = 0, i;
	int			 rc;

	if (st->head == NULL || st->head_len == 0)
		return;
	for (i = 0; i + 1 < st->head_len; i++)
		if (st->head[i] == '\r' && st->head[i + 1] == '\n')
			lines++;
	rc = http_parse_request(st->head, st->head_len,
	    fuzz_conf.http.max_header_size, m);
	FUZZ_CHECK(rc != PARSE_AGAIN, "a complete head is \"need more\": "
	    "%.*s", (int)st->head_len, st->head);
	if (rc != PARSE_OK)
		return;
	FUZZ_CHECK(m->head_len == st->head_len, "the head ends at %zu of "
	    "%u: %.*s", m->head_len, st->head_len, (int)st->head_len,
	    st->head);
	FUZZ_CHECK(m->nheaders + 2 == lines, "%u fields in %zu lines: %.*s",
	    m->nheaders, lines, (int)st->head_len, st->head);
	if (fs->protocol)
		FUZZ_CHECK(m->method.len == 3 && memcmp(m->method.ptr, "GET",
		    3) == 0, "an upgrade is a GET: %.*s", (int)st->head_len,
		    st->head);
	else if (fs->method_len < sizeof(fs->method))
		FUZZ_CHECK(m->method.len == fs->method_len &&
		    memcmp(m->method.ptr, fs->method, fs->method_len) == 0,
		    "the method is the client's: %.*s", (int)st->head_len,
		    st->head);
	if (!fs->protocol && fs->method_len == 7 &&
	    memcmp(fs->method, "CONNECT", 7) == 0 &&
	    fs->authority_len < sizeof(fs->authority))
		FUZZ_CHECK(m->target.len == fs->authority_len &&
		    memcmp(m->target.ptr, fs->authority, fs->authority_len) ==
		    0, "a CONNECT's target is its :authority: %.*s",
		    (int)st->head_len, st->head);
}

static void
fuzz_stream_free(struct fuzz_stream *fs)
{
	if (fs->prev != NULL)
		fs->prev->next = fs->next;
	else
		fuzz_streams = fs->next;
	if (fs->next != NULL)
		fs->next->prev = fs->prev;
	h2_head_drop(&fs->st);
	buf_put(fs->st.head);
	free(fs);
}

static int
fuzz_on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
	struct fuzz_stream	*fs;

	(void)arg;
	if (f->hd.type != NGHTTP2_HEADERS ||
	    f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	if ((fs = calloc(1, sizeof(*fs))) == NULL)
		abort();
	fs->st.id = f->hd.stream_id;
	fs->next = fuzz_streams;
	if (fuzz_streams != NULL)
		fuzz_streams->prev = fs;
	fuzz_streams = fs;
	nghttp2_session_set_stream_user_data(s, f->hd.stream_id, fs);
	return 0;
}

static int
fuzz_on_header(nghttp2_session *s, const nghttp2_frame *f,
    nghttp2_rcbuf *name, nghttp2_rcbuf *value, uint8_t flags, void *arg)
{
	struct fuzz_stream	*fs;
	nghttp2_vec		 n = nghttp2_rcbuf_get_buf(name);

	(void)flags;
	(void)arg;
	fs = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
	if (fs == NULL || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	if (n.len == 7 && memcmp(n.base, ":method", 7) == 0)
		fuzz_keep(fs->method, sizeof(fs->method), &fs->method_len,
		    value);
	else if (n.len == 10 && memcmp(n.base, ":authority", 10) == 0)
		fuzz_keep(fs->authority, sizeof(fs->authority),
		    &fs->authority_len, value);
	else if (n.len == 9 && memcmp(n.base, ":protocol", 9) == 0)
		fs->protocol = true;
	return h2_head_field(&fs->st, name, value);
}

static int
fuzz_on_frame(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
	struct fuzz_stream	*fs;

	(void)arg;
	fs = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
	if (fs == NULL || f->hd.type != NGHTTP2_HEADERS ||
	    f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	if (h2_head_finish(&fs->st, f->hd.flags & NGHTTP2_FLAG_END_STREAM) < 0)
		return 0;
	if (fs->st.rx_held && h2_head_frame(&fs->st, fuzz_rand(&fuzz_seed) & 1)
	    < 0)
		return 0;
	fuzz_check_head(fs);
	return 0;
}

static int
fuzz_on_close(nghttp2_session *s, int32_t id, uint32_t error, void *arg)
{
	struct fuzz_stream	*fs = nghttp2_session_get_stream_user_data(s,
				    id);

	(void)error;
	(void)arg;
	if (fs != NULL)
		fuzz_stream_free(fs);
	nghttp2_session_set_stream_user_data(s, id, NULL);
	return 0;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_conf.http.max_header_size = FUZZ_MAX_HEAD;
	fuzz_conf.buffer_size = 16384;
	buf_init(fuzz_conf.buffer_size, FUZZ_MAX_HEAD + 4096, 256);
	if (nghttp2_session_callbacks_new(&fuzz_cb) != 0 ||
	    nghttp2_option_new(&fuzz_opt) != 0)
		abort();
	nghttp2_session_callbacks_set_on_begin_headers_callback(fuzz_cb,
	    fuzz_on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback2(fuzz_cb,
	    fuzz_on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(fuzz_cb,
	    fuzz_on_frame);
	nghttp2_session_callbacks_set_on_stream_close_callback(fuzz_cb,
	    fuzz_on_close);
	/* As worker/h2.c sets them. */
	nghttp2_option_set_no_auto_window_update(fuzz_opt, 1);
	nghttp2_option_set_max_settings(fuzz_opt, 32);
	nghttp2_option_set_max_continuations(fuzz_opt, 8);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const uint8_t	 start[] = H2_PREFACE
				    "\0\0\0\4\0\0\0\0\0";	/* SETTINGS */
	nghttp2_session		*s;
	uint8_t			*in;
	size_t			 n = sizeof(start) - 1 + len;

	if (fuzz_cb == NULL)
		LLVMFuzzerInitialize(NULL, NULL);
	fuzz_seed = len;
	for (size_t i = 0; i < len && i < 16; i++)
		fuzz_seed = fuzz_seed * 131 + data[i];
	if ((in = malloc(n)) == NULL)
		abort();
	memcpy(in, start, sizeof(start) - 1);
	memcpy(in + sizeof(start) - 1, data, len);
	if (nghttp2_session_server_new2(&s, fuzz_cb, NULL, fuzz_opt) != 0)
		abort();
	(void)nghttp2_session_mem_recv(s, in, n);
	/* Streams still open go with the session (no close callback). */
	nghttp2_session_del(s);
	while (fuzz_streams != NULL)
		fuzz_stream_free(fuzz_streams);
	free(in);
	return 0;
}
