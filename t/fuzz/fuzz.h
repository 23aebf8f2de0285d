/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every fuzz target in t/fuzz/ shares. A target is one file defining
 * LLVMFuzzerTestOneInput for one parser; it is linked two ways: with
 * libFuzzer (--enable-fuzzing, clang, -fsanitize=fuzzer,address,undefined)
 * to search for inputs, and with replay.c (any compiler, always) to run its
 * corpus under `make check` as a regression test.
 *
 * Targets check properties, not only the absence of crashes: a violated
 * property goes through FUZZ_CHECK, which prints what failed (and, when
 * replaying, the input file) and aborts, so libFuzzer keeps the input as a
 * crash and a replay fails.
 */
#ifndef PT_T_FUZZ_FUZZ_H
#define PT_T_FUZZ_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FUZZ_CHECK(cond, ...)						\
	do {								\
		if (!(cond))						\
			fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
	} while (0)

/* ---- t/fuzz/fuzz.c ---------------------------------------------------- */

/* The corpus file being replayed, or NULL (libFuzzer knows its own). */
extern const char	*fuzz_input;

/* Prints "<file>:<line>: property violated: <cond>: <fmt...>" and the
 * input's name when replaying, then aborts. */
void	fuzz_fail(const char *file, int line, const char *cond,
	    const char *fmt, ...)
	    __attribute__((format(printf, 4, 5), noreturn));
/* A copy of <data>[0..<len>) in a heap block of exactly <len> bytes (one
 * more, a NUL, with <nul>), so AddressSanitizer sees any read past the
 * end. Never NULL (aborts when out of memory); free() it. */
char	*fuzz_dup(const uint8_t *data, size_t len, bool nul);
/* The bytes of <data> up to the first occurrence of <sep> (all of them
 * when it does not occur), as *<field>; advances past <sep>. False when
 * nothing is left. For inputs that carry several fields. */
bool	fuzz_split(const uint8_t **data, size_t *len, const char *sep,
	    const uint8_t **field, size_t *flen);
/* A small deterministic generator for split points and choices, seeded
 * from the input, so a replay makes the same choices as the fuzzer did. */
uint32_t fuzz_rand(uint64_t *state);
/* A file in memory (a memfd, made on the first call) holding exactly
 * <data>[0..<len>); returns its path (/proc/self/fd/N), for the parsers
 * that read a file by name (host files). Never touches the disk. */
const char *fuzz_memfile(const uint8_t *data, size_t len);

/* libFuzzer's entry points (the second is optional). */
int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);
int	LLVMFuzzerInitialize(int *argc, char ***argv);

#endif
