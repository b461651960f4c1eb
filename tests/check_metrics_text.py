# SPDX-License-Identifier: MIT
# check_metrics_text.py FILE... - check routepool Prometheus pages with a
# parser that needs no server: python3-prometheus-client's text parser
# (prometheus_client.parser.text_string_to_metric_families, Debian package
# python3-prometheus-client), then this project's strict rules on the
# same text, which that parser does not enforce:
#   - the text is valid UTF-8, every line ends in \n, no blank line;
#   - each family has exactly one # HELP and one # TYPE, before its
#     samples, and its samples are contiguous;
#   - every sample belongs to a declared family (histogram samples as
#     _bucket/_sum/_count);
#   - label values use only the escapes \\, \" and \n;
#   - no series appears twice.
# Then the two parses must agree: the same families, the same number of
# samples, and every pool label the strict reading decodes is one the
# client's parser decoded.  Exit 0 when every file passes; 1 with a message
# naming the file and line otherwise; 2 when the parser is missing.
import re
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.stderr.write("check_metrics_text.py: prometheus_client is not installed "
                     "(Debian: python3-prometheus-client)\n")
    sys.exit(2)

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


class Bad(Exception):
    pass


def label_value(line, i, lineno):
    """The label value starting after its opening quote at line[i]."""
    out = []
    while i < len(line):
        c = line[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\":
            nxt = line[i + 1:i + 2]
            if nxt not in ("\\", '"', "n"):
                raise Bad("line %d: invalid escape \\%s in a label value" % (lineno, nxt))
            out.append("\n" if nxt == "n" else nxt)
            i += 2
            continue
        out.append(c)
        i += 1
    raise Bad("line %d: unterminated label value" % lineno)


def sample(line, lineno):
    m = NAME.match(line)
    if not m:
        raise Bad("line %d: no metric name" % lineno)
    name, i, labels = m.group(0), m.end(), {}
    if line[i:i + 1] == "{":
        i += 1
        while True:
            lm = LABEL.match(line, i)
            if not lm or line[lm.end():lm.end() + 2] != '="':
                raise Bad("line %d: bad label" % lineno)
            key = lm.group(0)
            if key in labels:
                raise Bad("line %d: duplicate label %s" % (lineno, key))
            labels[key], i = label_value(line, lm.end() + 2, lineno)
            if line[i:i + 1] == "}":
                i += 1
                break
            if line[i:i + 1] != ",":
                raise Bad("line %d: expected , or }" % lineno)
            i += 1
    rest = line[i:]
    if not rest.startswith(" ") or " " in rest[1:]:
        raise Bad("line %d: expected one space and a value" % lineno)
    float(rest[1:].replace("Inf", "inf"))
    return name, labels


def family_of(name, families):
    if name in families and families[name]["type"] != "histogram":
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[:-len(suffix)]
        if name.endswith(suffix) and families.get(base, {}).get("type") in ("histogram", "summary"):
            return base
    return None


def strict(text):
    """The project's own rules; returns {family: [label dicts]}."""
    if not text.endswith("\n"):
        raise Bad("the last line does not end in a newline")
    families, order, current, seen = {}, [], None, set()
    for lineno, line in enumerate(text[:-1].split("\n"), 1):
        if not line:
            raise Bad("line %d: blank line" % lineno)
        if line.startswith("#"):
            m = re.match(r"# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$", line)
            if not m:
                raise Bad("line %d: neither # HELP nor # TYPE" % lineno)
            kind, name = m.group(1), m.group(2)
            fam = families.get(name)
            if fam is None:
                fam = families[name] = {"help": 0, "type": None, "samples": []}
                order.append(name)
            elif name != current:
                raise Bad("line %d: family %s declared again" % (lineno, name))
            if fam["samples"]:
                raise Bad("line %d: %s of %s after its samples" % (lineno, kind, name))
            if kind == "HELP":
                if fam["help"]:
                    raise Bad("line %d: second HELP for %s" % (lineno, name))
                fam["help"] = lineno
            else:
                if fam["type"]:
                    raise Bad("line %d: second TYPE for %s" % (lineno, name))
                fam["type"] = m.group(3)
            current = name
            continue
        name, labels = sample(line, lineno)
        fam = family_of(name, families)
        if fam is None or fam != current:
            raise Bad("line %d: sample %s outside a declared family's block" % (lineno, name))
        if not families[fam]["help"] or not families[fam]["type"]:
            raise Bad("line %d: %s lacks HELP or TYPE" % (lineno, fam))
        key = (name, tuple(sorted(labels.items())))
        if key in seen:
            raise Bad("line %d: duplicate series %s %s" % (lineno, name, labels))
        seen.add(key)
        families[fam]["samples"].append(labels)
    return {n: families[n] for n in order}


def check(path):
    raw = open(path, "rb").read()
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        raise Bad("not valid UTF-8 at byte %d" % e.start)
    mine = strict(text)
    theirs = {f.name: f for f in text_string_to_metric_families(text)}
    # The client strips _total from counter family names (0.16).
    names = {}
    for n, f in mine.items():
        key = n[:-6] if f["type"] == "counter" and n.endswith("_total") else n
        names[key] = n
    if set(theirs) != set(names):
        raise Bad("the client's parser read families %s, the strict reading %s"
                  % (sorted(theirs), sorted(names)))
    for key, f in theirs.items():
        fam = mine[names[key]]
        if f.type != fam["type"]:
            raise Bad("%s: type %s, expected %s" % (key, f.type, fam["type"]))
        if len(f.samples) != len(fam["samples"]):
            raise Bad("%s: the client read %d samples, the strict reading %d"
                      % (key, len(f.samples), len(fam["samples"])))
        pools = {s.labels.get("pool") for s in f.samples}
        if pools != {s.get("pool") for s in fam["samples"]}:
            raise Bad("%s: pool labels differ: %s" % (key, sorted(map(str, pools))))
    nsamples = sum(len(f["samples"]) for f in mine.values())
    pools = sorted({s["pool"] for f in mine.values() for s in f["samples"] if "pool" in s})
    print("%s: %d families, %d samples, pools %s: ok" % (path, len(mine), nsamples, pools))


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: check_metrics_text.py FILE...\n")
        return 2
    for path in argv[1:]:
        try:
            check(path)
        except (Bad, ValueError) as e:
            sys.stderr.write("check_metrics_text.py: %s: %s\n" % (path, e))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
