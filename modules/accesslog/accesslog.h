/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The accesslog module: its configuration (parsed by the master,
 * read-only in workers) and the per-worker sinks that buffer records and
 * write them without blocking.
 */
#ifndef PT_ACCESSLOG_H
#define PT_ACCESSLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <portico/module.h>

#include "modules/accesslog/fmt.h"

#define AL_BUFFER_DEFAULT	524288
/* A buffer is written (or handed to the writer thread) once it holds this
 * much, or half its size when that is less: the rest is the reserve that
 * takes records while the write is pending. A writer thread sharing the
 * worker's CPU may wait a scheduler slice (milliseconds) before it runs:
 * at 50,000 JSON records a second that is ~60 KB, which a 64 KiB buffer
 * written at its half did not have room for. Only the start of a buffer
 * is touched while the thread keeps up, so the reserve costs no cache.
 * Why 128 KiB: each hand-off to the thread costs two context switches and
 * the caches they spoil; bench/sidebyside (JSON to a file, the process
 * on one CPU) gave 0.878 at 64 KiB, 0.908 and 0.916 at 128 KiB, 0.926 at
 * 256 KiB, requests per CPU-second against no log. */
#define AL_WRITE_AT		131072
#define AL_BUFFER_MIN		(2 * AL_REC_MAX)
#define AL_BUFFER_MAX		(16 << 20)
#define AL_FLUSH_DEFAULT	100		/* ms */
#define AL_SYSLOG_DEFAULT	"/dev/log"
#define AL_EXIT_WAIT_MS		200		/* at exit, for a slow reader */
/* Dropped-count lines a buffer may hold at once (more wait for room). */
#define AL_NOTES_MAX		4
/* Room kept for a record's syslog header. */
#define AL_HDR_MAX		192

enum al_kind {
	AL_FILE = 0,
	AL_STDOUT,
	AL_SYSLOG
};

/* One entry of `logs`. */
struct al_log_conf {
	enum al_kind		 kind;
	char			*path;		/* file, or syslog socket */
	struct al_fmt_opts	 fmt;
	size_t			 buffer;	/* bytes per worker */
	unsigned		 flush_ms;
	unsigned		 mode;		/* a file's, when created */
	int			 fd;		/* master's (file, stdout) */
	/* syslog */
	int			 facility, severity;
	char			*tag;
	bool			 rfc5424;
	bool			 thread;	/* writer = "thread" */
	int			 line;		/* in the configuration */
};

struct al_conf {
	struct al_log_conf	*logs;
	size_t			 nlogs;
	bool			 want_headers;	/* a combined or json log */
	/* Who the workers run as: files the master creates are theirs, so
	 * a worker can reopen them by path after a rename. */
	uid_t			 uid;
	gid_t			 gid;
	int			 ctr_records, ctr_dropped, ctr_errors;
};

/* A log's state in one worker. */
struct al_sink {
	const struct al_log_conf *lc;
	int			 fd;
	bool			 stream;	/* pipe, FIFO, tty: <= PIPE_BUF */
	char			*buf;
	size_t			 len, cap;
	size_t			 write_at;	/* AL_WRITE_AT or cap / 2 */
	uint64_t		 dropped;	/* not yet reported in the log */
	/* Where the dropped-count lines in buf end: those lines are no
	 * records, so one that is lost is not counted as a dropped record
	 * (its count was counted when the records were dropped). */
	size_t			 notes[AL_NOTES_MAX];
	unsigned		 nnotes;
	struct pt_timer		 timer;
	bool			 timer_on;
	struct pt_io		 io;
	bool			 io_on;		/* waiting for EPOLLOUT */
	bool			 failing;	/* an error was logged */
	bool			 torn;		/* the file ends in a cut line */
	int			 worker;
	pid_t			 pid;
	char			 host[64];	/* RFC 5424 HOSTNAME */
	/* The syslog header of the second hdr_sec (al_syslog_hdr). */
	time_t			 hdr_sec;
	char			 hdr[AL_HDR_MAX];
	char			 hdr_tail[AL_HDR_MAX];
	size_t			 hdr_len, tail_len;
	const struct al_conf	*ac;
	/* writer = "thread" (writer.c): obuf is the thread's while busy. */
	struct al_writer	*wr;
	char			*obuf;
	size_t			 olen, ooff;	/* ooff: written so far */
	size_t			 onotes[AL_NOTES_MAX];	/* notes, of obuf */
	unsigned		 onnotes;
	uint64_t		 retry_at;	/* the thread's, after an error */
	bool			 busy;		/* worker's */
	bool			 t_done;	/* under wr->mu */
	bool			 o_reopen;	/* reopen after obuf */
	bool			 reopen_pending;
	bool			 t_torn, t_failing;	/* the thread's */
	uint64_t		 t_dropped, t_errors;	/* for the worker */
	struct pt_post		 post;
};

struct al_writer;

/* ---- accesslog_conf.c --------------------------------------------------- */

/*
 * Master: parses the module's entry <node>. Returns the configuration or
 * NULL with <err> set and *where_out the setting at fault (or NULL).
 */
struct al_conf	*al_conf_parse(const config_setting_t *node, char *err,
		    size_t errsz, const config_setting_t **where_out);
void		 al_conf_free(struct al_conf *ac);
/* Master: opens every file (O_APPEND, created for the workers' user)
 * and stdout. 0, or -1 after logging why. */
int		 al_conf_open(struct al_conf *ac);
void		 al_conf_close(struct al_conf *ac);
/* Master, SIGUSR1: a new file under each path, on the same descriptor
 * numbers, for the workers forked later. */
void		 al_conf_reopen(struct al_conf *ac);
/* open(2) of a log file, with the workers' owner when the master is
 * root; returns the descriptor or -errno. */
int		 al_file_open(const struct al_log_conf *lc, uid_t uid,
		    gid_t gid);

/* ---- sink.c ------------------------------------------------------------- */

/* Worker: a sink for <lc>. 0 or -errno. */
int		 al_sink_init(struct al_sink *s, const struct al_conf *ac,
		    const struct al_log_conf *lc, int worker);
/* Worker: best effort to write what is buffered (bounded wait), then
 * releases everything. */
void		 al_sink_fini(struct al_sink *s);
/*
 * Worker: queues one record (<line> ending in '\n'; a syslog sink puts
 * its header, of the time <wall_ms>, before it). Never blocks: when the buffer has no room even
 * after a non-blocking write, the record is dropped and counted.
 * Returns false then.
 */
bool		 al_sink_add(struct al_sink *s, const char *line, size_t len,
		    uint64_t wall_ms);
/* Worker: writes what it can now, without blocking. */
void		 al_sink_flush(struct al_sink *s);
/* Worker, SIGUSR1: flushes, then opens the file again by its path; on
 * failure keeps the descriptor it had (logged). */
void		 al_sink_reopen(struct al_sink *s);
/* Worker: the timer that writes a buffer flush ms after its first
 * record. */
void		 al_sink_arm(struct al_sink *s);
/* Worker: appends the dropped-records line when there is room. */
void		 al_sink_note_dropped(struct al_sink *s);
void		 al_sink_set_fd(struct al_sink *s, int fd);
/* Any thread: Unix time in ms; a connected non-blocking socket to the
 * syslog daemon (or -errno); the whole lines at the start of a buffer,
 * at most <max> bytes; how many lines a buffer holds. */
uint64_t	 al_wall_ms(void);
int		 al_syslog_connect(const char *path);
size_t		 al_whole_lines(const char *buf, size_t len, size_t max);
size_t		 al_count_lines(const char *buf, size_t len);
/* Any thread: the records (lines that are not dropped-count lines) of
 * buf[from..to), <notes> the end offsets of the buffer's dropped-count
 * lines. */
uint64_t	 al_count_records(const char *buf, size_t from, size_t to,
		    const size_t *notes, unsigned nnotes);
/* Any thread: whether a dropped-count line ends at <end>. */
bool		 al_is_note_end(const size_t *notes, unsigned nnotes,
		    size_t end);
/* Any thread: one non-blocking write of whole lines to a file (one
 * write) or a pipe (PIPE_BUF at most); bytes taken or -errno. A short
 * write that cuts a line drops the line's rest (*cut counts it) and
 * sets *torn, so the next write first ends the cut line. */
ssize_t		 al_write_fd(int fd, bool stream, bool *torn, uint64_t *cut,
		    const char *buf, size_t len);
/* Any thread: the records of buf as datagrams (sendmmsg, a batch);
 * bytes taken or -errno. */
ssize_t		 al_write_dgram(int fd, const char *buf, size_t len);

/* ---- hold.c -------------------------------------------------------------- */

/* A batch: records, and the arena their strings are copied to. */
#define AL_HOLD_RECS	128
#define AL_HOLD_BYTES	65536

struct al_held;

struct al_hold {
	struct al_held		*recs;
	size_t			 n;
	char			*arena;
	size_t			 used;
	struct pt_timer		 timer;
	bool			 timer_on;
	unsigned		 flush_ms;	/* the logs' shortest */
};

void		 al_hold_init(struct al_hold *h, unsigned flush_ms);
/* Worker: the batch's memory. 0, or -1 (out of memory). */
int		 al_hold_alloc(struct al_hold *h);
/* Worker: releases it (run the batch first: its records are dropped). */
void		 al_hold_free(struct al_hold *h);
/* Worker: holds a copy of <r>, running the batch first when it is full.
 * False when <r> is too large for any batch: the caller emits it. */
bool		 al_hold_add(struct al_hold *h, const struct al_rec *r);
/* Worker: formats the held records into the logs (al_emit), in order. */
void		 al_hold_run(struct al_hold *h);

/* ---- accesslog.c ---------------------------------------------------------- */

/* Worker: <r> formatted into every log of the worker. */
void		 al_emit(const struct al_rec *r);
/* Worker: every log's buffer written (or handed to the writer thread). */
void		 al_flush_logs(void);

/* ---- writer.c ------------------------------------------------------------ */

/* Worker, init_worker: a writer thread for the sinks of <sinks> whose log
 * has writer = "thread" (each gets its second buffer). 0 or -errno. */
int		 al_writer_start(struct al_writer **out, struct al_sink *sinks,
		    size_t n);
/* Worker: hands the sink's buffer to the thread unless it still has the
 * other one (then the records wait, or are dropped when it is full). */
void		 al_writer_handoff(struct al_sink *s);
/* Worker, exit_worker: the buffers written (<wait_ms> at most for a sink
 * that takes nothing), the thread joined; NULL is a no-op. */
void		 al_writer_stop(struct al_writer *wr, unsigned wait_ms);

#endif
