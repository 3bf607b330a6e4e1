"""The TOC's page estimate lays tables out with the docx writer's own layout
(docx_table_layout): a table the writer leaves out takes no room, and a table
without column definitions has as many columns as its widest row, as written."""
import json

from test_docx_edges import measured, report


def test_toc_pages_follow_the_written_tables(tmp_path, kiln_bin):
    hidden = [["x %d" % i, i] for i in range(300)]
    # the first row has one cell, the others three: the writer makes three columns
    uneven = [["short"]] + [["word " * 40, "second column text " * 10, "third " * 20]
                            for _ in range(100)]
    spec = {"version": 1, "blocks": [
        {"type": "toc"},
        {"type": "heading", "level": 1, "text": "Before the hidden table"},
        {"type": "table", "columns": [{"header": "a", "width": 0}, {"header": "b", "width": 0}],
         "rows": hidden},
        {"type": "heading", "level": 1, "text": "After the hidden table"},
        {"type": "table", "rows": uneven},
        {"type": "heading", "level": 1, "text": "After the uneven table"}]}
    path = tmp_path / "toc_tables.json"
    path.write_text(json.dumps(spec))
    rows = measured(tmp_path, path)
    assert [e for _, e, _ in rows] == [a for _, _, a in rows], report(rows)
    # the hidden table is not written, so it moves nothing
    assert rows[1][1] == 1, report(rows)
