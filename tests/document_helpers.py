"""Small document folders for `rankbench init` tests: Markdown, HTML, plain text and a hand-written PDF."""

from __future__ import annotations

from pathlib import Path


def _pdf_string(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def minimal_pdf(pages: list[str], title: str | None = None) -> bytes:
    """A valid PDF 1.4 file with one line of Helvetica text per page (correct xref offsets), readable by pypdf."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", "", "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for text in pages:
        stream = f"BT /F1 12 Tf 72 720 Td {_pdf_string(text)} Tj ET"
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
                       f"/Contents {len(objects)} 0 R >>")
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    info = None
    if title is not None:
        objects.append(f"<< /Title {_pdf_string(title)} >>")
        info = len(objects)
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    trailer = f"/Size {len(objects) + 1} /Root 1 0 R" + (f" /Info {info} 0 R" if info else "")
    out += f"trailer\n<< {trailer} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


REFUNDS_MD = """\
# Refund policy

Refunds for returned bikes.

## Delays

Refunds are paid within 14 days of the return.

```
# a comment in code, not a heading
```

Warranty claims
---------------

Two years on the frame.
"""

BATTERY_HTML = """\
<!DOCTYPE html>
<html><head><title>Battery guide</title><style>h2 { color: red }</style></head><body>
<h1>Battery guide</h1><p>Charge the battery &amp; store it cool.</p>
<h2>Charging</h2><p>Use the original charger.
Never overnight.</p><script>var hidden = "script text";</script>
<h2>Storage</h2><ul><li>Keep it at 50%</li><li>In a dry place</li></ul>
</body></html>
"""


def write_documents(folder: Path) -> Path:
    """A folder with one document of each type: policies/refunds.md, guide.html, shipping notes.txt, warranty.pdf."""
    (folder / "policies").mkdir(parents=True)
    (folder / "policies" / "refunds.md").write_text(REFUNDS_MD, encoding="utf-8")
    (folder / "guide.html").write_text(BATTERY_HTML, encoding="utf-8")
    (folder / "shipping notes.txt").write_text("Shipping takes three days.\nWe ship to France and Belgium.\n",
                                               encoding="utf-8")
    (folder / "warranty.pdf").write_bytes(minimal_pdf(["The warranty covers the motor for five years.",
                                                       "Claims go through your dealer."], title="Warranty"))
    return folder


QUESTIONS_CSV = """\
qid,question,document,section,grade,kind
,How long do refunds take?,policies/refunds.md,Delays,2,
,How long do refunds take?,policies/refunds.md,,1,
,How should I charge the battery?,guide.html,charging,,
,Where do you ship?,shipping notes.txt,,,
,Is the motor covered?,warranty.pdf,Page 1,,
,Do you sell cars?,,,,
"""
