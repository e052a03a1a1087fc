#!/usr/bin/env python3
"""Every relative link of the repository's Markdown (README.md, docs/ and results/) resolves: the file or folder it names exists,
and a #fragment names a heading of that file, spelt as GitHub spells a heading's anchor.
    tests/doc_links_test.py REPOSITORY
Links to other sites, and those inside code spans and fenced blocks, are not followed."""
import functools
import os
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"`+[^`]*`+")


def prose_lines(text):
    """The lines outside fenced code blocks, with their numbers."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading):
    """GitHub's anchor of a heading: lower case, markup and punctuation but '-' and '_' dropped,
    each space a '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    text = text.replace("`", "").lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


@functools.lru_cache(maxsize=None)
def anchors(path):
    """The anchors of every heading of the Markdown file `path`."""
    found, seen = set(), {}
    with open(path, encoding="utf-8") as f:
        for _, line in prose_lines(f.read()):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def main(root):
    files = ["README.md"] + sorted(
        os.path.relpath(os.path.join(folder, f), root)
        for top in ("docs", "results")
        for folder, _, names in os.walk(os.path.join(root, top))
        for f in names if f.endswith(".md"))
    failures, links = [], 0
    for name in files:
        source = os.path.join(root, name)
        with open(source, encoding="utf-8") as f:
            text = f.read()
        for number, line in prose_lines(text):
            for target in LINK.findall(CODE_SPAN.sub("", line)):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                    continue
                links += 1
                path, _, fragment = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(source), path)) \
                    if path else source
                where = f"{name}:{number}: ({target})"
                if not os.path.exists(resolved):
                    failures.append(f"{where} names {os.path.relpath(resolved, root)}, "
                                    "which does not exist")
                elif fragment and resolved.endswith(".md") and \
                        fragment not in anchors(resolved):
                    failures.append(f"{where}: {os.path.relpath(resolved, root)} has no "
                                    f"heading whose anchor is #{fragment}")
    for failure in failures:
        print("FAIL:", failure)
    if not failures:
        print(f"{links} relative links in {len(files)} Markdown files, each resolved")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
