#!/usr/bin/env python3
"""Checks that every table in docs/benchmarks.md says where its figures came from.

The convention, stated at the top of docs/benchmarks.md: above each table,
after the heading or table before it, a paragraph holds a line that starts
with `Command:`. From there to the paragraph's end, each backticked span is
a command that printed (or prints) the table; each must name a program that
exists: a file of the repository (`python3 bench/x.py ...`,
`bench/gpu_gpt2.sh ...`) or a tool the build makes (`zero-opt ...`,
`build/bin/gpt2_train ...`: an add_executable or add_llvm_executable target
of some CMakeLists.txt). The same paragraph names the commit the figures
came from, `commit 1a2b3c4`, or says `not run yet` for a table of targets
that no run has filled. Where the checkout is a full git clone, each commit
named must be one of its commits. Where the program is a Python script of
the repository, every `--flag` the command gives must be one its `--help`
lists, so that a command with a made-up or renamed flag fails here rather
than for the reader who reruns it.

A figure whose program was renamed or deleted, or whose command line was
never written down, cannot be reproduced, and a benchmark page full of such
figures drifts away from the code unnoticed; this catches both.

    check_benchmark_tables.py [--root DIR] [FILE]

FILE defaults to DIR/docs/benchmarks.md, DIR to the repository holding this
script. Exits 1 and lists each offending table by line number.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys

# Words that run the program named after them rather than being it.
LAUNCHERS = {"python3", "python", "/usr/bin/python3", "bash", "sh", "env",
             "time"}
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
COMMIT = re.compile(r"\bcommit\s+([0-9a-f]{7,40})\b", re.IGNORECASE)
NOT_RUN = re.compile(r"\bnot run yet\b", re.IGNORECASE)
EXECUTABLE = re.compile(r"\badd_(?:llvm_)?executable\(\s*([A-Za-z0-9_.+-]+)")
HEADING = re.compile(r"^#{1,6}\s")
TABLE_RULE = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")


def build_targets(root):
    """Names of the executables some CMakeLists.txt of the source tree declares."""
    names = set()
    for directory, subdirs, files in os.walk(root):
        # A build tree inside the checkout (build/) declares nothing of its
        # own, and walking it would take longer than the rest.
        if "CMakeCache.txt" in files:
            subdirs[:] = []
            continue
        subdirs[:] = [d for d in subdirs if not d.startswith(".")]
        if "CMakeLists.txt" in files:
            with open(os.path.join(directory, "CMakeLists.txt"),
                      encoding="utf-8", errors="replace") as f:
                names.update(EXECUTABLE.findall(f.read()))
    return names


def known_commits(root):
    """A function telling whether a hash is a commit of the checkout, or None
    where that cannot be told (no git, not a clone, a shallow clone)."""
    def git(*args):
        return subprocess.run(["git", "-C", root, *args], capture_output=True,
                              text=True)
    try:
        shallow = git("rev-parse", "--is-shallow-repository")
    except OSError:
        return None
    if shallow.returncode != 0 or shallow.stdout.strip() != "false":
        return None
    return lambda sha: git("cat-file", "-e", sha + "^{commit}").returncode == 0


def blocks(lines):
    """(kind, first line index, last line index) for each heading, table and
    paragraph outside fenced code; a `#` or `|` inside a code block is code."""
    out, i, fenced = [], 0, False
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            fenced = not fenced
            i += 1
            continue
        if fenced or not line.strip():
            i += 1
            continue
        if HEADING.match(line):
            out.append(("heading", i, i))
            i += 1
            continue
        if (line.startswith("|") and i + 1 < len(lines)
                and TABLE_RULE.match(lines[i + 1].strip())):
            end = i + 1
            while end + 1 < len(lines) and lines[end + 1].startswith("|"):
                end += 1
            out.append(("table", i, end))
            i = end + 1
            continue
        end = i
        while (end + 1 < len(lines) and lines[end + 1].strip()
               and not HEADING.match(lines[end + 1])
               and not lines[end + 1].lstrip().startswith("```")
               and not lines[end + 1].startswith("|")):
            end += 1
        out.append(("paragraph", i, end))
        i = end + 1
    return out


def program_of(command):
    """The program a command line runs: its first word after environment
    assignments and launchers such as python3."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    index = 0
    while index < len(words):
        word = words[index]
        if ENV_ASSIGNMENT.match(word) or word in LAUNCHERS:
            index += 1
        elif words[index:index + 3] == ["-m", "zero.run", "-n"]:
            index += 4  # our launcher and its rank count: the script follows
        else:
            return word
    return None


def check_program(program, root, targets):
    """None when the program exists, else why not."""
    if program.startswith("build/bin/") or "/" not in program:
        name = os.path.basename(program)
        if name in targets:
            return None
        return (f"'{program}' is not a tool the build makes (no "
                f"add_executable({name}) in any CMakeLists.txt)")
    path = os.path.normpath(os.path.join(root, program))
    if os.path.isabs(program) or not path.startswith(os.path.abspath(root) + os.sep):
        return f"'{program}' is not a path inside the repository"
    if not os.path.isfile(path):
        return f"'{program}' does not exist in the repository"
    return None


FLAG = re.compile(r"^--[A-Za-z0-9][A-Za-z0-9-]*")


def unknown_flags(command, program, root, helps):
    """The --flags of `command` that `program` (a Python script of the
    repository) does not list in its --help; helps caches the texts."""
    if not program.endswith(".py"):
        return []
    if program not in helps:
        try:
            run = subprocess.run([sys.executable, os.path.join(root, program),
                                  "--help"], capture_output=True, text=True,
                                 timeout=120)
            helps[program] = run.stdout if run.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            helps[program] = None
    text = helps[program]
    if text is None:
        return ["(its --help failed)"]
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    flags = []
    for word in words:
        match = FLAG.match(word)
        if match and not re.search(re.escape(match.group(0)) + r"\b", text):
            flags.append(match.group(0))
    return flags


def check(path, root):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    targets = build_targets(root)
    is_commit = known_commits(root)
    helps = {}
    problems, tables = [], 0
    parsed = blocks(lines)
    # A command belongs to the next table only: one above an earlier table
    # or under an earlier heading is that table's or section's.
    since = 0
    for index, (kind, first, last) in enumerate(parsed):
        if kind == "heading":
            since = index + 1
            continue
        if kind != "table":
            continue
        tables += 1
        where = f"{path}:{first + 1}"
        stretch = [b for b in parsed[since:index] if b[0] == "paragraph"]
        since = index + 1
        source = None
        for _, p_first, p_last in reversed(stretch):
            paragraph = lines[p_first:p_last + 1]
            starts = [k for k, text in enumerate(paragraph)
                      if text.startswith("Command:")]
            if starts:
                source = (p_first, paragraph, starts[0])
                break
        if source is None:
            problems.append(f"{where}: table with no 'Command:' paragraph above "
                            "it (after the heading or table before it)")
            continue
        p_first, paragraph, start = source
        text = " ".join(paragraph)
        commands = re.findall(r"`([^`]+)`", " ".join(paragraph[start:]))
        if not commands:
            problems.append(f"{where}: the 'Command:' line at line "
                            f"{p_first + start + 1} gives no command in backticks")
        for command in commands:
            program = program_of(command)
            why = (check_program(program, root, targets) if program
                   else "an empty command")
            if why:
                problems.append(f"{where}: command `{command}`: {why}")
            elif program:
                for flag in unknown_flags(command, program, root, helps):
                    problems.append(f"{where}: command `{command}`: {flag} is "
                                    f"not an option of {program} (its --help)")
        commits = COMMIT.findall(text)
        if not commits and not NOT_RUN.search(text):
            problems.append(f"{where}: the paragraph at line {p_first + 1} names "
                            "no commit ('commit 1a2b3c4', or 'not run yet')")
        if is_commit:
            for sha in commits:
                if not is_commit(sha):
                    problems.append(f"{where}: commit {sha} is not a commit of "
                                    "this repository")
    return tables, problems


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(here)),
                        help="the repository the commands' paths are relative to")
    parser.add_argument("file", nargs="?",
                        help="the page to check (default ROOT/docs/benchmarks.md)")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    path = args.file or os.path.join(root, "docs", "benchmarks.md")
    tables, problems = check(path, root)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s) in {tables} table(s)", file=sys.stderr)
        sys.exit(1)
    if tables == 0:
        sys.exit(f"{path}: no tables found")
    print(f"{tables} tables, each with its command and commit")


if __name__ == "__main__":
    main()
