"""Plots and a summary from `recops bench` / bench/*.py results (performance.md, "Where results live").

    python bench/plot.py RESULTS.json... --out DIR

Reads JSON lists of records (op, impl, backend, device, shape, dtype, phase, time_ms, tflops, gbps,
frac_*_ceiling, ceilings, peer, peer_time_ms, speedup_vs_peer, commit, date) and writes into DIR:
  throughput_<op>.png   GB/s (or TFLOP/s) per shape, ours beside the peer timed in the same run
  speedup_vs_peer.png   peer time / our time per op and shape (> 1: we are faster), a panel per family
  fraction_of_ceiling.png  our throughput as a fraction of the ceiling measured in the same run,
                        a panel per op family
  README.md, index.html the table of every record with the plots
`recops report` runs this script.
"""

import argparse
import html
import json
import sys
from pathlib import Path

try:
    import matplotlib
except ImportError:  # recops report names the interpreter and how to choose another (exit 3)
    print(f"report: matplotlib is not installed for {sys.executable}", file=sys.stderr)
    sys.exit(3)

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64"}
OURS_COLOR, PEER_COLOR = "#1f77b4", "#ff7f0e"


def load(paths):
    """Records keyed by (op, phase, shape id, dtype, backend); a record with a peer wins."""
    merged, sources = {}, []
    for path in paths:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as e:
            print(f"report: skipping {path}: cannot read it as JSON ({e})", file=sys.stderr)
            continue
        if not isinstance(data, list):
            print(f"report: skipping {path}: not a JSON list of records", file=sys.stderr)
            continue
        meta = set()
        # An accuracy file (recops check / compare: every record has a verdict and no time_ms) has
        # nothing to plot: it is skipped and named, so `report bench/results/<device>/*.json` works.
        if data and all(isinstance(r, dict) and "verdict" in r and "time_ms" not in r for r in data):
            print(f"report: skipping {path}: accuracy records (no time_ms)", file=sys.stderr)
            continue
        # Files of other shapes (bench/ scripts' own records, e.g. stem_indexer_split) are skipped
        # and named, like the accuracy files.
        odd = next((r for r in data if not isinstance(r, dict) or "op" not in r
                    or "time_ms" not in r), None)
        if odd is not None:
            print(f"report: skipping {path}: a record lacks op or time_ms: {str(odd)[:100]}",
                  file=sys.stderr)
            continue
        for r in data:
            if r.get("time_ms") is None:
                continue
            shape = r.get("shape") or {}
            sid = r.get("case") or shape.get("id") or ",".join(f"{k}={v}" for k, v in shape.items())
            r = dict(r, dtype=DTYPES.get(r.get("dtype"), r.get("dtype")), shape_id=str(sid), source=Path(path).name)
            key = (r["op"], r.get("phase", "fwd"), r["shape_id"], r["dtype"], r.get("backend"))
            old = merged.get(key)
            if old is None or r.get("peer_time_ms") is not None or old.get("peer_time_ms") is None:
                merged[key] = r
            meta.add((r.get("device"), str(r.get("commit")), str(r.get("date"))[:10]))
        sources.append((Path(path).name, len(data), sorted(meta, key=str)))
    return list(merged.values()), sources


def first_of(r, fields):
    """(value, name) of the first (key, name) of `fields` whose key the record has a value for,
    else (None, None)."""
    for key, name in fields:
        if r.get(key) is not None:
            return r[key], name
    return None, None


def metric(r):
    """(value, unit) of a record's throughput: TFLOP/s where the op counts FLOPs, else GB/s."""
    return first_of(r, (("tflops", "TFLOP/s"), ("gbps", "GB/s")))


def fraction(r):
    """(value, ceiling) of a record's fraction of a ceiling: the FLOP one, else copy bandwidth."""
    return first_of(r, (("frac_flops_ceiling", "FLOP ceiling"),
                        ("frac_bw_ceiling", "copy bandwidth")))


MULTI_BACKEND = False  # set by main(): label the backend when the records mix backends


def label(r):
    s = f"{r['shape_id']} {r['dtype']}" + ("" if r.get("phase", "fwd") == "fwd" else f" {r['phase']}")
    return s + (f" [{r.get('backend', '?')}]" if MULTI_BACKEND else "")


def sort_key(r):
    return (r["op"], r.get("phase", "fwd"), r["shape_id"], r["dtype"], str(r.get("backend")))


def bar_chart(path, title, ylabel, labels, series, hline=None, hline_label=None, log=False):
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(labels) + 2.5), 4.2))
    n = len(series)
    width = 0.8 / max(n, 1)
    for k, (name, values, color) in enumerate(series):
        xs = [i + (k - (n - 1) / 2) * width for i in range(len(labels))]
        vals = [v if v is not None else 0 for v in values]
        bars = ax.bar(xs, vals, width, label=name, color=color)
        for b, v in zip(bars, values):
            if v is not None:
                ax.annotate(f"{v:.3g}", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center",
                            va="bottom", fontsize=7, xytext=(0, 1), textcoords="offset points")
    if hline is not None:
        ax.axhline(hline, color="gray", linestyle="--", linewidth=1, label=hline_label)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)


FAMILIES = {}  # op -> family folder (src/ops/<family>), from `recops report` (--families)


def family(op):
    """The op's family: as the registry says, else its name's first word (hstu_attn -> hstu)."""
    return FAMILIES.get(op) or op.split("_")[0]


def hbar_chart(path, title, xlabel, records, values, line, line_label, log=False):
    """One horizontal bar per (op, shape), one panel per op family with the same x axis, so that
    a family's rows stay together and every label is legible."""
    groups = {}
    for r, v in zip(records, values):
        groups.setdefault(family(r["op"]), []).append((f"{r['op']} {label(r)}", v))
    names = sorted(groups)
    heights = [len(groups[n]) + 1.2 for n in names]
    longest = max(len(x) for g in groups.values() for x, _ in g)
    # Room for the longest label (about 0.065 in per character at 8 pt) beside a 6 in plot.
    fig, axes = plt.subplots(len(names), 1, sharex=True, squeeze=False, layout="constrained",
                             figsize=(6.0 + 0.065 * longest, 0.3 * sum(heights) + 1.2),
                             gridspec_kw={"height_ratios": heights})
    for ax, name in zip(axes[:, 0], names):
        labels = [x for x, _ in groups[name]]
        vals = [v for _, v in groups[name]]
        ys = list(range(len(labels)))[::-1]
        ax.barh(ys, vals, color=[OURS_COLOR if v >= line else PEER_COLOR for v in vals], height=0.7)
        for y, v in zip(ys, vals):
            ax.annotate(f"{v:.3g}", (v, y), va="center", fontsize=8, xytext=(2, 0),
                        textcoords="offset points")
        ax.axvline(line, color="gray", linestyle="--", linewidth=1, label=line_label)
        ax.set_yticks(ys)
        ax.set_yticklabels(labels, fontsize=8)
        ax.set_ylim(-0.7, len(labels) - 0.3)
        ax.set_title(f"{name} ({len(labels)})", fontsize=10, loc="left")
        if log:
            ax.set_xscale("log")
        ax.grid(axis="x", alpha=0.3)
    axes[0, 0].legend(fontsize=8, loc="best")
    axes[-1, 0].set_xlabel(xlabel, fontsize=9)
    fig.suptitle(title, fontsize=11)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="JSON files of records")
    ap.add_argument("--out", required=True, help="directory to write")
    ap.add_argument("--families", default="", help="op=family,... (recops report passes the registry's)")
    args = ap.parse_args(argv)
    FAMILIES.update(kv.split("=", 1) for kv in args.families.split(",") if "=" in kv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    records, sources = load(args.results)
    if not records:
        raise SystemExit("no records with a time in " + ", ".join(args.results))
    records.sort(key=sort_key)
    global MULTI_BACKEND
    MULTI_BACKEND = len({r.get("backend") for r in records}) > 1
    devices = sorted({str(r.get("device")) for r in records})
    where = ", ".join(devices)
    plots = []

    for op in sorted({r["op"] for r in records}):
        rs = [r for r in records if r["op"] == op and metric(r)[0] is not None]
        if not rs:
            continue
        unit = metric(rs[0])[1]
        rs = [r for r in rs if metric(r)[1] == unit]
        ours = [metric(r)[0] for r in rs]
        # The peer moved the same bytes (or did the same FLOPs) in peer_time_ms.
        peer = [metric(r)[0] * r["time_ms"] / r["peer_time_ms"] if r.get("peer_time_ms") else None for r in rs]
        peers = sorted({r["peer"] for r in rs if r.get("peer")})
        series = [("recops (" + ", ".join(sorted({r.get('impl', '?') for r in rs})) + ")", ours, OURS_COLOR)]
        if any(p is not None for p in peer):
            series.append(("peer: " + ", ".join(peers), peer, PEER_COLOR))
        name = f"throughput_{op}.png"
        bar_chart(out / name, f"{op}: throughput per shape ({where}; higher is better)", unit,
                  [label(r) for r in rs], series)
        plots.append((name, f"{op}: {unit} per shape, recops vs peer"))

    with_peer = [r for r in records if r.get("speedup_vs_peer") is not None]
    if with_peer:
        hbar_chart(out / "speedup_vs_peer.png",
                   f"speedup over the peer timed in the same run ({where}; > 1: recops faster)",
                   "peer time / recops time (log scale)", with_peer,
                   [r["speedup_vs_peer"] for r in with_peer], 1.0, "parity", log=True)
        plots.append(("speedup_vs_peer.png", "speedup over the peer, per op and shape"))

    with_frac = [r for r in records if fraction(r)[0] is not None]
    if with_frac:
        kinds = sorted({fraction(r)[1] for r in with_frac})
        hbar_chart(out / "fraction_of_ceiling.png",
                   f"fraction of the ceiling measured in the same run ({where}; {', '.join(kinds)})",
                   "fraction of ceiling", with_frac,
                   [fraction(r)[0] for r in with_frac], 0.85, "goal for memory-bound ops (0.85)")
        plots.append(("fraction_of_ceiling.png", "fraction of the ceiling, per op and shape"))

    cols = ["op", "shape", "phase", "dtype", "backend", "impl", "time ms", "throughput", "of ceiling", "peer", "peer ms", "speedup"]

    def cells(r):
        v, unit = metric(r)
        f, _ = fraction(r)
        return [r["op"], r["shape_id"], str(r.get("phase", "fwd")), r["dtype"], str(r.get("backend") or "-"),
                str(r.get("impl", "")), f"{r['time_ms']:.4g}",
                f"{v:.4g} {unit}" if v is not None else "-", f"{100 * f:.1f}%" if f is not None else "-",
                str(r.get("peer") or "-"), f"{r['peer_time_ms']:.4g}" if r.get("peer_time_ms") else "-",
                f"{r['speedup_vs_peer']:.3g}x" if r.get("speedup_vs_peer") else "-"]

    md = ["# recops benchmark report", "", f"Device(s): {where}. {len(records)} records from:", ""]
    for name, n, meta in sources:
        md.append(f"- `{name}` ({n} records; " + "; ".join(f"{d}, commit {c}, {t}" for d, c, t in meta) + ")")
    md += ["", "Throughput uses each op's byte floor (GB/s) or FLOP convention (TFLOP/s); the ceiling and the",
           "peer were measured in the same run (performance.md).", ""]
    for name, caption in plots:
        md += [f"![{caption}]({name})", ""]
    md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    md += ["| " + " | ".join(c.replace("|", "\\|") for c in cells(r)) + " |" for r in records]
    (out / "README.md").write_text("\n".join(md) + "\n")

    h = ["<!doctype html><html><head><meta charset='utf-8'><title>recops benchmark report</title>",
         "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}img{max-width:100%}</style></head><body>",
         "<h1>recops benchmark report</h1>", f"<p>Device(s): {html.escape(where)}; {len(records)} records.</p><ul>"]
    for name, n, meta in sources:
        h.append(f"<li><code>{html.escape(name)}</code> ({n} records)</li>")
    h.append("</ul>")
    for name, caption in plots:
        h.append(f"<figure><img src='{name}' alt='{html.escape(caption)}'><figcaption>{html.escape(caption)}"
                 "</figcaption></figure>")
    h.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr>")
    for r in records:
        h.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells(r)) + "</tr>")
    h.append("</table></body></html>")
    (out / "index.html").write_text("\n".join(h) + "\n")
    print(f"wrote {len(plots)} plot(s), README.md and index.html to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
