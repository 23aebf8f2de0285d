/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/alfloor.so: the access log's floor, for bench/sidebyside's
 * accesslog-floor-* variants. It is the accesslog module itself (the same
 * configuration, buffers, writer thread and sinks, loaded under the same
 * name) except that LOG makes no record: each log gets one fixed line per
 * transaction, a plain GET's record formatted once at start in that log's
 * format. What it costs is what any implementation pays to write a
 * record (the hook, the time, the bytes into a buffer, the write or the
 * datagram); the module's cost above it is its record and formatting.
 * Never installed, never loaded by a test.
 */
static void	al_floor_log(void);

#define AL_FLOOR
#include "../modules/accesslog/accesslog.c"

#include <arpa/inet.h>
#include <netinet/in.h>

static char	*alf_lines;	/* AL_REC_MAX bytes per log */
static size_t	*alf_lens;

/* A keep-alive GET of bench/fairness's http-1k, as loadgen sends it. */
static int
alf_make(void)
{
	struct sockaddr_storage	 peer, up;
	struct sockaddr_in	*p = (struct sockaddr_in *)&peer;
	struct sockaddr_in	*u = (struct sockaddr_in *)&up;
	struct al_rec		 r;
	size_t			 i;

	if ((alf_lines = calloc(al_w.n, AL_REC_MAX)) == NULL ||
	    (alf_lens = calloc(al_w.n, sizeof(*alf_lens))) == NULL) {
		free(alf_lines);
		alf_lines = NULL;
		return -1;
	}
	memset(&peer, 0, sizeof(peer));
	memset(&up, 0, sizeof(up));
	p->sin_family = u->sin_family = AF_INET;
	p->sin_addr.s_addr = u->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	p->sin_port = htons(40312);
	u->sin_port = htons(28081);
	memset(&r, 0, sizeof(r));
	r.wall_ms = al_now_wall_ms();
	r.peer = &peer;
	r.upstream = &up;
	r.listener = "127.0.0.1:28080";
	r.method = (struct pt_str){ "GET", 3 };
	r.host = (struct pt_str){ "127.0.0.1", 9 };
	r.path = (struct pt_str){ "/bytes/1024", 11 };
	r.proto = PT_PROTO_HTTP;
	r.port = 28081;
	r.status = 200;
	r.bytes_in = 74;
	r.bytes_out = 1093;
	r.body_out = 1024;
	r.txn = 18198;
	r.worker = al_w.id;
	for (i = 0; i < al_w.n; i++)
		alf_lens[i] = al_fmt(&al_w.ac->logs[i].fmt, &r,
		    alf_lines + i * AL_REC_MAX, AL_REC_MAX);
	return 0;
}

static void
al_floor_log(void)
{
	uint64_t	 ms = al_now_wall_ms();
	size_t		 i;

	if (alf_lines == NULL && alf_make() < 0)
		return;
	for (i = 0; i < al_w.n; i++)
		al_sink_add(&al_w.sinks[i], alf_lines + i * AL_REC_MAX,
		    alf_lens[i], ms);
}
