"""Every `kiln render`, `kiln validate`, `kiln run` and `kiln session` command line
README.md, docs/run.md, docs/session.md and samples/jobs/README.md show in their shell blocks, run exactly as written
(issue 15 item 11).

Each runs with bash in a scratch directory that holds what the lines name: `bin/kiln`
and `kiln` on PATH are the binary under test ($KILN_BIN), `samples/` and `exec/` are the
repository's, `python3` is Debian's, and the files the examples take for granted
(my-spec.json, spec.json, analysis.py, sales.csv, job.py) are small stand-ins. A line
must exit 0; the files it says it makes must be there. In samples/jobs/README.md, whose
blocks are steps in order (make a directory, run a job in it, render what it saved), each
block with a kiln line runs as one script. The curl and `kiln serve` lines are run by
test_serve_demo.py (they need a server).
"""
import json
import os
import re
import shutil
import subprocess
import zipfile

import pytest

from conftest import KILN_BIN, REPO, SAMPLES

LINE_DOCS = [REPO / "README.md", REPO / "docs" / "run.md", REPO / "docs" / "session.md",
             REPO / "docs" / "batch.md"]
BLOCK_DOCS = [REPO / "samples" / "jobs" / "README.md"]
KILN_LINE = re.compile(r"(^|\|\s*)(bin/)?kiln (render|validate|run|session|batch)\b")


def shell_blocks(path):
    """[(line number, [command lines])] of path's ```sh blocks, comments left out."""
    out, fenced, inside = [], False, False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            # a fence opens or closes a block whatever its language; only shell ones count
            fenced = not fenced
            inside = fenced and line.strip() in ("```sh", "```bash", "```")
            if inside:
                out.append((n + 1, []))
            continue
        if inside and line.strip() and not line.lstrip().startswith("#"):
            out[-1][1].append(line.strip())
    return out


def shell_lines(path):
    """(line number, text) of each command line in path's ```sh blocks."""
    return [(n, line) for n, lines in shell_blocks(path) for line in lines]


def doc_name(path):
    return str(path.relative_to(REPO))


COMMANDS = [(doc_name(p), n, line) for p in LINE_DOCS for n, line in shell_lines(p)
            if KILN_LINE.search(line)]
COMMANDS += [(doc_name(p), n, "\n".join(lines)) for p in BLOCK_DOCS for n, lines in shell_blocks(p)
             if any(KILN_LINE.search(line) for line in lines)]


def test_the_docs_show_commands():
    names = {name for name, _n, _l in COMMANDS}
    assert names == {"README.md", "docs/run.md", "docs/session.md", "docs/batch.md",
                     "samples/jobs/README.md"}, COMMANDS
    assert any("-- " in line and "-c" in line for _d, _n, line in COMMANDS), \
        "docs/run.md shows -c CODE -- ARGS"


@pytest.fixture(scope="module")
def docs_dir(tmp_path_factory, kiln_bin, sample_data_ready):
    d = tmp_path_factory.mktemp("docs-commands")
    (d / "bin").mkdir()
    os.symlink(KILN_BIN, d / "bin" / "kiln")
    os.symlink(SAMPLES, d / "samples")
    os.symlink(REPO / "exec", d / "exec")
    os.symlink("/usr/bin/python3", d / "bin" / "python3")   # Debian's, with pandas
    shutil.copy(SAMPLES / "sales_workbook.json", d / "my-spec.json")
    (d / "spec.json").write_text(json.dumps({"sheets": [{"name": "S", "rows": [["a", 1]]}]}))
    shutil.copy(SAMPLES / "jobs" / "data" / "sales.csv", d / "sales.csv")
    (d / "analysis.py").write_text(
        "import pandas as pd\n"
        "df = pd.read_csv('/mnt/data/sales.csv')\n"
        "df.describe().to_csv('summary.csv')\n"
        "print('rows:', len(df))\n")
    (d / "job.py").write_text("import sys\nprint('args:', sys.argv[1:])\n")
    return d


def made_files(line):
    """What a line says it writes: -o FILE of a render, > FILE, and -o DIR/ of a run."""
    files = re.findall(r"-o (\S+\.(?:xlsx|docx|pdf|pptx))\b", line)
    files += re.findall(r"> (\S+)", line)
    return files


def json_values(text):
    """The JSON values text holds one after another (each `kiln run` prints one)."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return values
        value, at = decoder.raw_decode(text, at)
        values.append(value)


@pytest.mark.parametrize("doc,lineno,line", COMMANDS,
                         ids=["%s:%d" % (d, n) for d, n, _l in COMMANDS])
def test_documented_command_works(docs_dir, doc, lineno, line):
    commands = [c.split("#")[0] for c in line.splitlines()]
    runs = [c for c in commands if re.search(r"\bkiln run\b", c)]
    if runs and os.geteuid() != 0:
        pytest.fail("kiln run needs root; run the tests as root")
    env = dict(os.environ, PATH="%s:%s" % (docs_dir / "bin", os.environ.get("PATH", "")))
    proc = subprocess.run(["bash", "-c", "set -eo pipefail\n" + line], cwd=docs_dir, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    assert proc.returncode == 0, "%s line %d: %s\nexit %d\n%s\n%s" % (
        doc, lineno, line, proc.returncode, proc.stdout.decode()[-2000:],
        proc.stderr.decode()[-2000:])
    for name in [f for c in commands for f in made_files(c)]:
        path = docs_dir / name
        assert path.is_file() and path.stat().st_size > 0, "%s did not make %s" % (line, name)
        if name.endswith((".xlsx", ".docx", ".pptx")):
            assert zipfile.is_zipfile(path), name
    for c in commands:
        # a batch's journal says every job is ok
        m = re.search(r"\bkiln batch\b.* -o (\S+)", c)
        if m:
            entries = [json.loads(l) for l in (docs_dir / m.group(1) / "results.jsonl").read_text()
                       .splitlines()]
            assert entries and all(e["status"] == "ok" for e in entries), entries
    if not runs:
        return
    results = json_values(proc.stdout.decode())
    assert len(results) == len(runs), (runs, proc.stdout.decode()[-2000:])
    for command, result in zip(runs, results):
        assert result["status"] == "ok" and not result["render_errors"], result
        if "samples/jobs/" in command:
            # a sample job's saved specs are rendered without asking (item 15)
            assert result["documents"], result
            for d in result["documents"]:
                assert (docs_dir / "out" / d["name"]).is_file()
        if "-- " in command:
            assert "args:" in result["stdout"]["text"] or "[" in result["stdout"]["text"], result
