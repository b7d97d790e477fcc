#!/bin/sh
# Accept the GUI's current drawing as its golden images: rerun the
# headless golden-image tests with ROCESCOPE_ACCEPT_GOLDEN=1, which writes
# app/src/gui/golden/*.png instead of comparing. Look at the images (or
# `git diff --stat app/src/gui/golden`) before committing them.
set -eu
cd "$(dirname "$0")/../.."
ROCESCOPE_ACCEPT_GOLDEN=1 cargo test -p rocescope --lib gui::golden "$@"
rm -f target/golden/*.actual.png target/golden/*.diff.png
git status --short app/src/gui/golden
