#!/bin/sh
# Writes the King James Bible (Debian package bible-kjv-text, public domain) as plain UTF-8 text,
# one verse a line: "Book Chapter:Verse<TAB>text", in canonical order, Genesis 1:1 to Revelation 22:21.
# Deterministic: the same package version gives the same bytes.
#
# Usage: scripts/make_kjv_corpus.sh [OUT_FILE]   (default .corpus/kjv.txt)
# Needs: apt-get install bible-kjv bible-kjv-text
set -eu

out=${1:-.corpus/kjv.txt}
if ! command -v bible >/dev/null 2>&1; then
    echo "make_kjv_corpus.sh: the 'bible' program is missing (apt-get install bible-kjv bible-kjv-text)" >&2
    exit 1
fi
mkdir -p "$(dirname "$out")"

# `bible -l0` prints a "Book Chapter" heading before each chapter and "  N text" for each verse,
# without line wrapping.
LC_ALL=C bible -l0 "gen1:1-rev22:21" | LC_ALL=C awk '
    /^$/ { next }
    /^  *[0-9]+ / {
        if (chapter == "") { print "make_kjv_corpus.sh: verse before any heading" > "/dev/stderr"; exit 1 }
        line = $0
        sub(/^ +/, "", line)
        verse = line
        sub(/ .*/, "", verse)
        text = substr(line, length(verse) + 2)
        sub(/ +$/, "", text)
        printf "%s:%s\t%s\n", chapter, verse, text
        next
    }
    { chapter = $0 }
' > "$out.tmp"

verses=$(wc -l < "$out.tmp")
if [ "$verses" -ne 31102 ]; then
    echo "make_kjv_corpus.sh: expected 31102 verses, got $verses" >&2
    rm -f "$out.tmp"
    exit 1
fi
mv "$out.tmp" "$out"
echo "wrote $out: $verses verses, $(wc -c < "$out") bytes"
