#!/bin/sh
# Generates configure and Makefile.in from a clean clone.
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf --install --force
