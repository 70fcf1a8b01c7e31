"""index.json, the shipped tables' identities as `compact.index_text` writes it: the document's
digest (`index_digest`), and the check of what is read (`check_index`); its entries are
`compact_read.index_entry`'s. A first lookup by build-id reads `build_ids.txt` instead, and never
this module."""
from .compact_read import FORMAT, entry_problem, sha256_hex


def index_digest(doc: dict) -> str:
    """The sha256 of an `index.json` document without its own `sha256`."""
    import json

    body = {k: v for k, v in doc.items() if k != "sha256"}
    return sha256_hex(json.dumps(body, indent=1, sort_keys=True).encode())


def _text_has_digest(text: bytes, claimed) -> bool:
    """Whether `text`, as `compact.index_text` writes it, is the document whose digest is `claimed`:
    its body is the same text without the `sha256` line (keys sorted, one space of indent), so one
    sha256 of bytes checks it, where `index_digest` would encode the whole document again in Python
    (10 ms of every process's first lookup)."""
    if not isinstance(claimed, str):
        return False
    line = b'\n "sha256": "' + claimed.encode() + b'",'
    at = text.find(line)
    return at >= 0 and sha256_hex(text[:at] + text[at + len(line):].rstrip(b"\n")) == claimed


def check_index(doc, text: bytes = None) -> str:
    """Why `index.json`'s content is not what `compact.index_text` writes ('' if it is): its digest,
    the shape of every entry, plain file names. `text`, the bytes `doc` was parsed from, makes the
    digest one sha256 when they are in the written form (any other form is checked as `doc`)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return f"not an index of format {FORMAT}"
    if not (text is not None and _text_has_digest(text, doc.get("sha256"))) and doc.get("sha256") != index_digest(doc):
        return "it fails its own checksum"
    if not (isinstance(doc.get("tables"), list) and isinstance(doc.get("aliases"), dict)
            and isinstance(doc.get("pool_sha256"), str)):
        return "no tables, aliases or pool checksum"
    for e in doc["tables"]:
        why = entry_problem(e)
        if why:
            return why
    return ""
