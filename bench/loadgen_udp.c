/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * loadgen_udp: the udp scenario. One SOCKS5 UDP ASSOCIATE (blocking, before
 * the clock starts), then datagrams of --payload bytes to a UDP echo target
 * through the relay: --window of them stay in flight, or with --rate they
 * leave at that pace (at most --window in flight). Each carries its slot
 * and a sequence number; one not back within --timeout counts as lost (an
 * error of class timeout) and its slot is reused. Reports round trips per
 * second and the share delivered.
 *
 * Deliberately not here: fragments (FRAG != 0), IPv6, names as targets.
 */
#include "config.h"

#include "loadgen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define UDP_BATCH	64

struct udp_slot {
	uint64_t	 seq;
	uint64_t	 sent_at;
	bool		 out;		/* in flight */
};

struct udp_run {
	const struct lg_opts	*o;
	struct lg_result	*res;
	int			 ep, tfd, ufd;
	struct sockaddr_in	 relay;
	uint64_t		 now, from, to, paced_from;
	bool			 sending;
	size_t			 dlen;		/* header + payload */
	uint8_t			*sbufs;		/* one datagram per slot */
	uint8_t			*rbufs;		/* UDP_BATCH receive slots */
	struct udp_slot		*slots;
	uint32_t		*free;		/* --rate: slots not out */
	uint32_t		 nfree;
	uint64_t		 next_seq;
	uint64_t		 paced;		/* --rate: datagrams sent */
	uint64_t		 seq_from;	/* first measured sequence */
	bool			 seq_from_set;
	struct mmsghdr		 out[UDP_BATCH];
	struct iovec		 out_iov[UDP_BATCH];
	uint32_t		 out_slot[UDP_BATCH];
	unsigned		 nout;
	/* Counted for sequence numbers >= seq_from only. */
	uint64_t		 sent, back, late, lost, send_err, bad;
};

/* Reads exactly <len> bytes from a blocking socket: 0, or -errno (EOF is
 * -ECONNRESET). */
static int
read_full(int fd, void *buf, size_t len)
{
	size_t	 got = 0;
	ssize_t	 n;

	while (got < len) {
		n = recv(fd, (char *)buf + got, len - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		got += (size_t)n;
	}
	return 0;
}

static int
send_full(int fd, const void *buf, size_t len)
{
	ssize_t	 n = send(fd, buf, len, MSG_NOSIGNAL);

	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EIO;
}

static int
fail(struct udp_run *r, enum lg_err e, const char *what, int err)
{
	static char	 why[256];

	r->res->err[e]++;
	snprintf(why, sizeof(why), "udp: %s%s%s", what, err ? ": " : "",
	    err ? strerror(err) : "");
	r->res->note = why;
	fprintf(stderr, "loadgen %s\n", why);
	return -1;
}

/* The RFC 1929 exchange, when --auth. Returns 0, or -1 after fail(). */
static int
udp_auth(struct udp_run *r)
{
	const struct lg_opts	*o = r->o;
	uint8_t			 msg[3 + 255 + 255], rep[2];
	size_t			 n = 0;
	int			 err;

	msg[n++] = 1;
	msg[n++] = (uint8_t)o->ulen;
	memcpy(msg + n, o->user, o->ulen);
	n += o->ulen;
	msg[n++] = (uint8_t)o->plen;
	memcpy(msg + n, o->pass, o->plen);
	n += o->plen;
	if ((err = send_full(r->tfd, msg, n)) < 0 ||
	    (err = read_full(r->tfd, rep, 2)) < 0)
		return fail(r, lg_err_of(-err), "RFC 1929", -err);
	if (rep[1] != 0)
		return fail(r, LG_ERR_STATUS, "RFC 1929: refused", 0);
	return 0;
}

/*
 * The control connection and the association. Returns 0, or -1 after
 * fail() counted the error.
 */
static int
udp_associate(struct udp_run *r)
{
	const struct lg_opts	*o = r->o;
	struct timeval		 tv;
	struct sockaddr_in	 local;
	socklen_t		 len = sizeof(local);
	uint8_t			 msg[LG_PP_MAX + 10], rep[262];
	size_t			 n = 0;
	ssize_t			 pp;
	int			 err, one = 1;

	tv.tv_sec = (time_t)o->timeout + 1;
	tv.tv_usec = 0;
	r->tfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (r->tfd < 0)
		return fail(r, LG_ERR_OTHER, "socket", errno);
	setsockopt(r->tfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(r->tfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(r->tfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(r->tfd, (const struct sockaddr *)&o->proxy,
	    sizeof(o->proxy)) < 0)
		return fail(r, lg_err_of(errno), "connect to proxy", errno);
	/* --proxy-header: the header goes with the greeting, in one
	 * write. Before the window: not counted. */
	if (o->proxy_header != LG_PP_NONE) {
		if ((pp = lg_proxy_header(o, r->tfd, msg)) < 0)
			return fail(r, LG_ERR_OTHER, "PROXY header", errno);
		n = (size_t)pp;
	}
	msg[n] = 5;
	msg[n + 1] = 1;
	msg[n + 2] = o->auth ? 2 : 0;
	if (n > 0)
		r->res->pp_sent = 1;
	if ((err = send_full(r->tfd, msg, n + 3)) < 0 ||
	    (err = read_full(r->tfd, rep, 2)) < 0)
		return fail(r, lg_err_of(-err), "greeting", -err);
	if (rep[0] != 5 || rep[1] != (o->auth ? 2 : 0))
		return fail(r, rep[1] == 0xff ? LG_ERR_STATUS : LG_ERR_OTHER,
		    "method refused", 0);
	if (o->auth && udp_auth(r) < 0)
		return -1;
	/* The UDP socket is bound first so the request can name it: the
	 * relay then accepts datagrams from this port only. */
	if (getsockname(r->tfd, (struct sockaddr *)&local, &len) < 0)
		return fail(r, LG_ERR_OTHER, "getsockname", errno);
	local.sin_port = 0;
	r->ufd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	len = sizeof(local);
	if (r->ufd < 0 ||
	    bind(r->ufd, (struct sockaddr *)&local, sizeof(local)) < 0 ||
	    getsockname(r->ufd, (struct sockaddr *)&local, &len) < 0)
		return fail(r, LG_ERR_OTHER, "UDP socket", errno);
	msg[0] = 5;
	msg[1] = 3;	/* UDP ASSOCIATE */
	msg[2] = 0;
	msg[3] = 1;
	memcpy(msg + 4, &local.sin_addr, 4);
	memcpy(msg + 8, &local.sin_port, 2);
	if ((err = send_full(r->tfd, msg, 10)) < 0 ||
	    (err = read_full(r->tfd, rep, 5)) < 0)
		return fail(r, lg_err_of(-err), "UDP ASSOCIATE", -err);
	if (rep[0] != 5)
		return fail(r, LG_ERR_OTHER, "UDP ASSOCIATE: not SOCKS5", 0);
	if (rep[1] != 0)
		return fail(r, LG_ERR_STATUS, rep[1] == 7 ?
		    "UDP ASSOCIATE refused: command not supported" :
		    "UDP ASSOCIATE refused", 0);
	n = lg_socks_reply_len(rep, 5);
	if (n == SIZE_MAX || (err = read_full(r->tfd, rep + 5, n - 5)) < 0)
		return fail(r, LG_ERR_OTHER, "UDP ASSOCIATE: bad reply", 0);
	if (rep[3] != 1)
		return fail(r, LG_ERR_OTHER, "UDP ASSOCIATE: relay not IPv4",
		    0);
	memset(&r->relay, 0, sizeof(r->relay));
	r->relay.sin_family = AF_INET;
	memcpy(&r->relay.sin_addr, rep + 4, 4);
	memcpy(&r->relay.sin_port, rep + 8, 2);
	if (r->relay.sin_addr.s_addr == htonl(INADDR_ANY))
		r->relay.sin_addr = o->proxy.sin_addr;
	if (connect(r->ufd, (struct sockaddr *)&r->relay,
	    sizeof(r->relay)) < 0)
		return fail(r, LG_ERR_OTHER, "connect to relay", errno);
	return 0;
}

static bool
measured(const struct udp_run *r, uint64_t seq)
{
	return r->seq_from_set && seq >= r->seq_from;
}

/* Gives slot <i> a new sequence number and queues it. */
static void
udp_queue(struct udp_run *r, uint32_t i)
{
	struct udp_slot	*s = &r->slots[i];
	uint8_t		*d = r->sbufs + (size_t)i * r->dlen;
	unsigned	 k = r->nout;

	s->seq = r->next_seq++;
	s->sent_at = r->now;
	s->out = true;
	memcpy(d + LG_UDP_HDR, &i, 4);
	memcpy(d + LG_UDP_HDR + 4, &s->seq, 8);
	r->out_iov[k].iov_base = d;
	r->out_iov[k].iov_len = r->dlen;
	memset(&r->out[k].msg_hdr, 0, sizeof(r->out[k].msg_hdr));
	r->out[k].msg_hdr.msg_iov = &r->out_iov[k];
	r->out[k].msg_hdr.msg_iovlen = 1;
	r->out_slot[k] = i;
	r->nout = k + 1;
}

/*
 * Sends the queued datagrams. One the socket refuses stays in flight and
 * is replaced once it times out, as a lost one would be.
 */
static void
udp_flush(struct udp_run *r)
{
	unsigned	 done = 0, k;
	int		 n;

	while (done < r->nout) {
		n = sendmmsg(r->ufd, r->out + done, r->nout - done, 0);
		if (n <= 0)
			break;
		for (k = done; k < done + (unsigned)n; k++)
			if (measured(r, r->slots[r->out_slot[k]].seq)) {
				r->sent++;
				r->res->up += r->o->payload;
			}
		done += (unsigned)n;
	}
	for (k = done; k < r->nout; k++)
		if (measured(r, r->slots[r->out_slot[k]].seq))
			r->send_err++;
	r->nout = 0;
}

/* Slot <i> is free again: straight back out, or to the paced pool. */
static void
udp_release(struct udp_run *r, uint32_t i)
{
	r->slots[i].out = false;
	if (!r->sending)
		return;
	if (r->o->rate > 0)
		r->free[r->nfree++] = i;
	else {
		udp_queue(r, i);
		if (r->nout == UDP_BATCH)
			udp_flush(r);
	}
}

/* --rate: what is due by now leaves, as far as free slots allow. */
static void
udp_pace(struct udp_run *r)
{
	uint64_t	 due;

	if (r->o->rate <= 0 || !r->sending)
		return;
	due = (uint64_t)((double)(r->now - r->paced_from) / NS_PER_S *
	    r->o->rate) + 1;
	while (r->paced < due && r->nfree > 0) {
		udp_queue(r, r->free[--r->nfree]);
		r->paced++;
		if (r->nout == UDP_BATCH)
			udp_flush(r);
	}
	/* Behind with no free slot: the window is the limit, not --rate. */
	if (r->paced < due && r->nfree == 0)
		r->paced = due;
	udp_flush(r);
}

static void
udp_on_readable(struct udp_run *r)
{
	struct mmsghdr	 in[UDP_BATCH];
	struct iovec	 iov[UDP_BATCH];
	const uint8_t	*p;
	struct udp_slot	*s;
	uint64_t	 seq;
	uint32_t	 slot;
	size_t		 hl, len, cap = r->dlen + 64;
	int		 i, n;

	for (i = 0; i < UDP_BATCH; i++) {
		iov[i].iov_base = r->rbufs + (size_t)i * cap;
		iov[i].iov_len = cap;
		memset(&in[i].msg_hdr, 0, sizeof(in[i].msg_hdr));
		in[i].msg_hdr.msg_iov = &iov[i];
		in[i].msg_hdr.msg_iovlen = 1;
	}
	n = recvmmsg(r->ufd, in, UDP_BATCH, MSG_DONTWAIT, NULL);
	for (i = 0; i < n; i++) {
		p = iov[i].iov_base;
		len = in[i].msg_len;
		hl = len >= 5 ? lg_socks_reply_len(p, len) : SIZE_MAX;
		if (hl == SIZE_MAX || p[2] != 0 || len != hl + (size_t)
		    r->o->payload) {
			r->bad++;
			continue;
		}
		memcpy(&slot, p + hl, 4);
		memcpy(&seq, p + hl + 4, 8);
		if (slot >= (uint32_t)r->o->window) {
			r->bad++;
			continue;
		}
		s = &r->slots[slot];
		if (!s->out || s->seq != seq) {
			/* Already counted lost and replaced. */
			if (measured(r, seq))
				r->late++;
			continue;
		}
		if (measured(r, seq)) {
			r->back++;
			r->res->down += r->o->payload;
			lg_lat_add(r->now - s->sent_at);
		}
		udp_release(r, slot);
	}
	udp_flush(r);
}

/* Datagrams out for longer than --timeout are lost: replace them. */
static void
udp_scan(struct udp_run *r)
{
	uint64_t	 limit = (uint64_t)(r->o->timeout * NS_PER_S);
	uint32_t	 i;

	for (i = 0; i < (uint32_t)r->o->window; i++) {
		if (!r->slots[i].out || r->now - r->slots[i].sent_at <= limit)
			continue;
		if (measured(r, r->slots[i].seq))
			r->lost++;
		udp_release(r, i);
	}
	udp_flush(r);
}

static bool
udp_drained(const struct udp_run *r)
{
	uint32_t	 i;

	for (i = 0; i < (uint32_t)r->o->window; i++)
		if (r->slots[i].out)
			return false;
	return true;
}

/* Runs until the window ends, then drains for one --timeout. */
static int
udp_loop(struct udp_run *r)
{
	struct epoll_event	 evs[4], ev;
	uint64_t		 next_scan, next_tick, stop, start;
	uint32_t		 i;
	double			 cpu0 = 0;
	bool			 progress;
	int			 n, k;
	char			 c;

	ev.events = EPOLLIN;
	ev.data.fd = r->ufd;
	epoll_ctl(r->ep, EPOLL_CTL_ADD, r->ufd, &ev);
	ev.data.fd = r->tfd;
	epoll_ctl(r->ep, EPOLL_CTL_ADD, r->tfd, &ev);
	progress = isatty(2) && r->o->warmup + r->o->duration > 3;
	start = r->now = r->paced_from = lg_now();
	r->from = r->now + (uint64_t)(r->o->warmup * NS_PER_S);
	r->to = r->from + (uint64_t)(r->o->duration * NS_PER_S);
	stop = r->to + (uint64_t)(r->o->timeout * NS_PER_S);
	r->sending = true;
	for (i = 0; i < (uint32_t)r->o->window; i++)
		udp_release(r, (uint32_t)r->o->window - 1 - i);
	udp_flush(r);
	udp_pace(r);
	next_scan = r->now + LG_SCAN_NS;
	next_tick = r->now + NS_PER_S;
	while (r->now < stop) {
		n = epoll_wait(r->ep, evs, 4, r->o->rate > 0 ? 1 :
		    1 + (int)(LG_SCAN_NS / NS_PER_MS));
		if (n < 0 && errno != EINTR) {
			perror("loadgen: epoll_wait");
			return -1;
		}
		r->now = lg_now();
		if (!r->seq_from_set && r->now >= r->from) {
			r->seq_from = r->next_seq;
			r->seq_from_set = true;
			cpu0 = lg_cpu();
			r->from = r->now;
		}
		if (lg_stop && r->sending) {
			r->res->stopped = true;
			r->to = r->now;
			stop = r->now + (uint64_t)(r->o->timeout * NS_PER_S);
		}
		if (r->now >= r->to && r->sending) {
			r->sending = false;
			r->res->cpu_s = lg_cpu() - cpu0;
			r->res->wall_s = (double)(r->now - r->from) / NS_PER_S;
		}
		for (k = 0; k < n; k++) {
			if (evs[k].data.fd == r->ufd) {
				udp_on_readable(r);
				continue;
			}
			/* The association lives as long as this TCP
			 * connection: EOF or an error ends it. */
			if (recv(r->tfd, &c, 1, MSG_DONTWAIT) <= 0) {
				fail(r, LG_ERR_RESET, "the proxy closed the "
				    "control connection", 0);
				return 0;
			}
		}
		udp_pace(r);
		if (r->now >= next_scan) {
			udp_scan(r);
			next_scan = r->now + LG_SCAN_NS;
		}
		if (progress && r->now >= next_tick) {
			r->res->requests = r->back;
			lg_progress(r->o, r->res, r->now - start);
			next_tick += NS_PER_S;
		}
		if (!r->sending && udp_drained(r))
			break;
	}
	if (progress)
		fputc('\n', stderr);
	for (i = 0; i < (uint32_t)r->o->window; i++)
		if (r->slots[i].out && measured(r, r->slots[i].seq))
			r->lost++;
	return 0;
}

static void
udp_result(struct udp_run *r)
{
	struct lg_result	*res = r->res;

	res->requests = r->back;
	res->err[LG_ERR_TIMEOUT] += r->lost;
	res->err[LG_ERR_OTHER] += r->bad + r->send_err;
	res->delivered_pct = r->sent == 0 ? 0.0 :
	    100.0 * (double)(r->back + r->late) / (double)r->sent;
	if (res->delivered_pct > 100)
		res->delivered_pct = 100;
}

int
lg_udp_main(const struct lg_opts *o, struct lg_result *res)
{
	struct udp_run	 r;
	int		 bufsz = 1 << 20;
	uint32_t	 i;

	memset(&r, 0, sizeof(r));
	r.o = o;
	r.res = res;
	r.tfd = r.ufd = r.ep = -1;
	r.dlen = LG_UDP_HDR + (size_t)o->payload;
	r.sbufs = calloc((size_t)o->window, r.dlen);
	r.rbufs = calloc(UDP_BATCH, r.dlen + 64);
	r.slots = calloc((size_t)o->window, sizeof(*r.slots));
	r.free = calloc((size_t)o->window, sizeof(*r.free));
	if (r.sbufs == NULL || r.rbufs == NULL || r.slots == NULL ||
	    r.free == NULL || (r.ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		perror("loadgen: setup");
		return -1;
	}
	res->delivered_pct = 0;
	if (udp_associate(&r) == 0) {
		setsockopt(r.ufd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
		setsockopt(r.ufd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
		for (i = 0; i < (uint32_t)o->window; i++) {
			uint8_t	*d = r.sbufs + (size_t)i * r.dlen;

			d[3] = 1;	/* RSV RSV FRAG = 0, ATYP IPv4 */
			memcpy(d + 4, &o->target.v4.sin_addr, 4);
			memcpy(d + 8, &o->target.v4.sin_port, 2);
			memset(d + LG_UDP_HDR + LG_UDP_SEQ_LEN, 'x',
			    (size_t)o->payload - LG_UDP_SEQ_LEN);
		}
		if (udp_loop(&r) == 0)
			udp_result(&r);
	}
	if (r.ufd >= 0)
		close(r.ufd);
	if (r.tfd >= 0)
		close(r.tfd);
	close(r.ep);
	free(r.sbufs);
	free(r.rbufs);
	free(r.slots);
	free(r.free);
	return 0;
}
