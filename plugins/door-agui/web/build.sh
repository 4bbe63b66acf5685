#!/bin/sh
# Rebuild the chat page bundle from the locked npm packages.
set -e
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
node build.mjs "$@"
