"""Every `kiln render`, `kiln validate` and `kiln run` command line README.md and
docs/run.md show in their shell blocks, run exactly as written (issue 15 item 11).

Each runs with bash in a scratch directory that holds what the lines name: `bin/kiln`
and `kiln` on PATH are the binary under test ($KILN_BIN), `samples/` is the
repository's, and the files the examples take for granted (my-spec.json, spec.json,
analysis.py, sales.csv, job.py) are small stand-ins. A line must exit 0; the files it
says it makes must be there. The curl and `kiln serve` lines are run by
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

DOCS = [REPO / "README.md", REPO / "docs" / "run.md"]
KILN_LINE = re.compile(r"(^|\|\s*)(bin/)?kiln (render|validate|run)\b")


def shell_lines(path):
    """(line number, text) of each command line in path's ```sh blocks."""
    out, inside = [], False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            inside = not inside and line.strip() in ("```sh", "```bash", "```")
            continue
        if inside and line.strip() and not line.lstrip().startswith("#"):
            out.append((n, line.strip()))
    return out


COMMANDS = [(p.name, n, line) for p in DOCS for n, line in shell_lines(p)
            if KILN_LINE.search(line)]


def test_the_docs_show_commands():
    names = {name for name, _n, _l in COMMANDS}
    assert names == {"README.md", "run.md"}, COMMANDS
    assert any("-- " in line and "-c" in line for _d, _n, line in COMMANDS), \
        "docs/run.md shows -c CODE -- ARGS"


@pytest.fixture(scope="module")
def docs_dir(tmp_path_factory, kiln_bin, sample_data_ready):
    d = tmp_path_factory.mktemp("docs-commands")
    (d / "bin").mkdir()
    os.symlink(KILN_BIN, d / "bin" / "kiln")
    os.symlink(SAMPLES, d / "samples")
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


@pytest.mark.parametrize("doc,lineno,line", COMMANDS,
                         ids=["%s:%d" % (d, n) for d, n, _l in COMMANDS])
def test_documented_command_works(docs_dir, doc, lineno, line):
    if " run " in " %s " % line.split("#")[0] and os.geteuid() != 0:
        pytest.fail("kiln run needs root; run the tests as root")
    env = dict(os.environ, PATH="%s:%s" % (docs_dir / "bin", os.environ.get("PATH", "")))
    proc = subprocess.run(["bash", "-c", "set -o pipefail; " + line], cwd=docs_dir, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert proc.returncode == 0, "%s line %d: %s\nexit %d\n%s\n%s" % (
        doc, lineno, line, proc.returncode, proc.stdout.decode()[-2000:],
        proc.stderr.decode()[-2000:])
    for name in made_files(line.split("#")[0]):
        path = docs_dir / name
        assert path.is_file() and path.stat().st_size > 0, "%s did not make %s" % (line, name)
        if name.endswith((".xlsx", ".docx", ".pptx")):
            assert zipfile.is_zipfile(path), name
    if re.search(r"\bkiln run\b", line):
        result = json.loads(proc.stdout)
        assert result["status"] == "ok" and not result["render_errors"], result
        if "csv_to_spreadsheet" in line:
            # saved specs are rendered without asking (item 15)
            assert result["documents"], result
            for d in result["documents"]:
                assert (docs_dir / "out" / d["name"]).is_file()
        if "-- " in line:
            assert "args:" in result["stdout"]["text"] or "[" in result["stdout"]["text"], result
