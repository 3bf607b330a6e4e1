"""The benchmark's ten columns, shared by bench/run.py and the Python
baselines: (header, Kiln column type, number format, width in characters).
The number formats are Kiln's defaults for those types (docs/spec.md)."""

COLUMNS = [
    ("id", "integer", "#,##0", 10),
    ("date", "date", "yyyy-mm-dd", 12),
    ("name", "string", None, 22),
    ("category", "string", None, 14),
    ("description", "string", None, 48),
    ("amount", "number", "#,##0.00", 14),
    ("price", "currency", "$#,##0.00", 12),
    ("active", "boolean", None, 8),
    ("code", "string", None, 10),
    ("discount", "percent", "0.0%", 10),
]
