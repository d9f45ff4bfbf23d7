"""Phase `compare` of make_reference.py: Ferrum's logits (f32, row-major [rows, vocab], written by
run-schedule.ts) against the transformers references that `make` wrote, for every depth, BLOCK_ROWS rows at a
time so memory stays bounded whatever the schedule's length. Prints and appends (JSONL) errors over all rows
and per row kind, and the verdicts. KL is always KL(reference || candidate) = sum p_ref (log p_ref - log p_cand).
Verdicts, both reported:
  direct (the issue's literal criterion): Ferrum vs transformers bf16, mean KL < 1e-3 and top-1 >= 99%;
  asAccurateAsTransformersBf16: Ferrum no further from the f32 reference than transformers' own bf16 forwards
  (mean KL and mean relative L2 error at most 1.25x the larger of sdpa's and eager's, top-1 at most one row
  below). `pass` (the exit status) is either.
Top-1 is also reported over the "decided" rows only: those whose f32 top-2 margin exceeds 1% of the row's
logit range (the tiny fixtures' rule), since near-ties are coin flips for any bf16 forward.
"""
import json, os, sys
import numpy as np
import torch
import torch.nn.functional as F

REFERENCES = ("bf16", "eager", "f32")
# Each pair: (reference, candidate); its KL is KL(reference || candidate).
PAIRS = {"ferrumVsF32": ("f32", "ferrum"), "bf16VsF32": ("f32", "bf16"), "eagerVsF32": ("f32", "eager"),
         "ferrumVsBf16": ("bf16", "ferrum"), "eagerVsBf16": ("bf16", "eager")}
BLOCK_ROWS = 64  # 4 inputs x 64 rows x 151,936 float64 ~ 0.3 GB, plus temporaries
DECIDED_MARGIN = 0.01  # a row's top-1 is decided when its f32 top-2 margin exceeds this fraction of its range


def reference_path(model_dir, kind, d):
    """Where `make` writes reference `kind`'s logits after layer d."""
    return os.path.join(model_dir, f"reference-{kind}-depth{d}.bin")


def row_kinds(steps, prefix_hits):
    """Per row of a schedule.json's steps: decode (a one-token entry), prefill (a chunk from position 0),
    prefixHit (the suffix after a cached prefix) or chunk (a later chunk of a chunked prefill)."""
    kind = lambda name, start, count: ("decode" if count == 1 else "prefill" if start == 0 else "prefixHit"
                                       if start == prefix_hits.get(name, {}).get("tokens") else "chunk")
    return [kind(*entry) for step in steps for entry in step for _ in range(entry[2])]


def row_errors(ref, got):
    """Per-row errors of `got` against `ref` ([rows, vocab] float64): KL(ref || got) of the next-token
    distributions, top-1 match, relative L2 error, max abs error over ref's range."""
    p_log = F.log_softmax(ref, dim=-1)
    q_log = F.log_softmax(got, dim=-1)
    return {"kl": (p_log.exp() * (p_log - q_log)).sum(-1),
            "top1": (ref.argmax(-1) == got.argmax(-1)).double(),
            "relL2": (got - ref).norm(dim=-1) / ref.norm(dim=-1),
            "absErrOverRange": (got - ref).abs().amax(-1) / (ref.amax(-1) - ref.amin(-1))}


def per_row(files, num_rows, vocab, device):
    """Every pair's row_errors, each reference's top-2 margin and f32's range: 1-D tensors over all rows,
    computed BLOCK_ROWS rows at a time so memory stays bounded whatever the schedule's length."""
    maps = {}
    for kind, path in files.items():
        size = os.path.getsize(path)
        if size != num_rows * vocab * 4:
            sys.exit(f"{path}: {size} bytes, expected {num_rows} rows x {vocab} f32 = {num_rows * vocab * 4}")
        maps[kind] = np.memmap(path, dtype=np.float32, mode="r", shape=(num_rows, vocab))
    blocks = []
    for lo in range(0, num_rows, BLOCK_ROWS):
        x = {k: torch.from_numpy(np.array(m[lo:lo + BLOCK_ROWS])).to(device).double() for k, m in maps.items()}
        block = {(pair, stat): v for pair, (ref, got) in PAIRS.items()
                 for stat, v in row_errors(x[ref], x[got]).items()}
        for ref in ("f32", "bf16"):
            top2 = x[ref].topk(2, dim=-1).values
            block["margin", ref] = top2[:, 0] - top2[:, 1]
        block["range", "f32"] = x["f32"].amax(-1) - x["f32"].amin(-1)
        blocks.append(block)
    return {key: torch.cat([b[key] for b in blocks]).cpu() for key in blocks[0]}


def summarize(rows, pair, keep, decided):
    """One pair's errors over the rows where `keep`; top1Decided only over those also `decided`."""
    at = lambda stat: rows[pair, stat][keep]
    settled = rows[pair, "top1"][keep & decided]
    return {"meanKL": at("kl").mean().item(), "maxKL": at("kl").max().item(), "top1": at("top1").mean().item(),
            "top1Decided": settled.mean().item() if len(settled) else None, "numDecided": len(settled),
            "meanRelL2": at("relL2").mean().item(), "maxRelL2": at("relL2").max().item(),
            "maxAbsErrOverRange": at("absErrOverRange").max().item(),
            "minTop2Margin": rows["margin", PAIRS[pair][0]][keep].min().item()}


def verdict(row, num_rows):
    """The issue's direct check, the as-accurate-as-transformers-bf16 check (see the module docstring), either."""
    direct = row["ferrumVsBf16"]["meanKL"] < 1e-3 and row["ferrumVsBf16"]["top1"] >= 0.99
    ours, sdpa, eager = row["ferrumVsF32"], row["bf16VsF32"], row["eagerVsF32"]
    bound = lambda key: 1.25 * max(sdpa[key], eager[key]) + 1e-9
    as_accurate = (ours["meanKL"] <= bound("meanKL") and ours["meanRelL2"] <= bound("meanRelL2")
                   and ours["top1"] >= min(sdpa["top1"], eager["top1"]) - 1.0 / num_rows - 1e-9)
    return {"direct": direct, "asAccurateAsTransformersBf16": as_accurate, "pass": direct or as_accurate}


def pct(x):
    return "n/a" if x is None else f"{100 * x:.1f}%"


def report(name, row):
    """The full-depth summary: rows, KL, top-1 (all rows and decided rows), per row kind, the verdicts."""
    fv32, bv32, ev32, fvb = (row[k] for k in ("ferrumVsF32", "bf16VsF32", "eagerVsF32", "ferrumVsBf16"))
    kl = lambda m: f"mean {m['meanKL']:.2e} max {m['maxKL']:.2e}"
    top = lambda m: f"{pct(m['top1'])} (decided rows {pct(m['top1Decided'])})"
    print(f"{name}: {row['rows']} rows, {fv32['numDecided']} decided (f32 top-2 margin > {DECIDED_MARGIN:.0%} of "
          f"range) | KL(f32||ferrum) {kl(fv32)} | KL(f32||bf16) {kl(bv32)} | KL(f32||eager) {kl(ev32)} | "
          f"KL(bf16||ferrum) {kl(fvb)}")
    print(f"{name}: top-1 ferrum=bf16 {top(fvb)} | ferrum=f32 {top(fv32)} | bf16=f32 {top(bv32)} | "
          f"eager=f32 {top(ev32)}")
    for kind, sub in row["byKind"].items():
        f, b = sub["ferrumVsF32"], sub["bf16VsF32"]
        print(f"{name}:   {kind:>9} {sub['rows']:>4} rows: KL(bf16||ferrum) {sub['ferrumVsBf16']['meanKL']:.2e} "
              f"top-1 {pct(sub['ferrumVsBf16']['top1'])} | KL(f32||ferrum) {f['meanKL']:.2e} KL(f32||bf16) "
              f"{b['meanKL']:.2e} | relL2 vs f32 ferrum {f['meanRelL2']:.4f} bf16 {b['meanRelL2']:.4f}")
    verdict_word = lambda ok: "PASS" if ok else "FAIL"
    print(f"{name}: issue criterion, Ferrum vs transformers bf16 (mean KL(bf16||ferrum) {fvb['meanKL']:.2e}, "
          f"needs < 1e-3; top-1 {pct(fvb['top1'])}, needs >= 99%): {verdict_word(row['direct'])} | at least as "
          f"close to f32 as transformers bf16 (KL {fv32['meanKL']:.2e} vs sdpa {bv32['meanKL']:.2e} / eager "
          f"{ev32['meanKL']:.2e}, relL2 {fv32['meanRelL2']:.4f} vs {bv32['meanRelL2']:.4f} / "
          f"{ev32['meanRelL2']:.4f}, top-1 {pct(fv32['top1'])} vs {pct(bv32['top1'])} / {pct(ev32['top1'])}): "
          f"{verdict_word(row['asAccurateAsTransformersBf16'])} | overall {verdict_word(row['pass'])}", flush=True)


def depth_row(rows, kinds):
    """The JSONL record's metrics for one depth: every pair over all rows and per row kind."""
    num_rows = len(kinds)
    decided = rows["margin", "f32"] > DECIDED_MARGIN * rows["range", "f32"]
    everything = torch.ones(num_rows, dtype=torch.bool)
    row = {"rows": num_rows, "klDirection": "KL(reference||candidate)",
           **{pair: summarize(rows, pair, everything, decided) for pair in PAIRS}, "byKind": {}}
    for kind in dict.fromkeys(kinds.tolist()):
        keep = torch.from_numpy(kinds == kind)
        row["byKind"][kind] = {"rows": int(keep.sum()), **{p: summarize(rows, p, keep, decided) for p in PAIRS}}
    rel = lambda pair: [round(v, 5) for v in rows[pair, "relL2"].tolist()]
    row["perRowRelL2VsF32"] = {"ferrum": rel("ferrumVsF32"), "bf16": rel("bf16VsF32")}
    return row


def compare(model_dir, ferrum, results, device):
    """Compares Ferrum's logits files (`ferrum`, {depth} replaced by each depth) with the references in
    `model_dir`, appends one JSONL record per depth to `results`; True when the full depth passes."""
    with open(os.path.join(model_dir, "reference.json")) as f:
        meta = json.load(f)
    with open(os.path.join(model_dir, "schedule.json")) as f:
        sched = json.load(f)
    kinds = np.array(row_kinds(sched["steps"], sched["prefixHits"]))
    if len(kinds) != meta["numRows"]:
        sys.exit(f"{model_dir}: schedule.json feeds {len(kinds)} rows, reference.json says {meta['numRows']}")
    name = os.path.basename(model_dir.rstrip("/"))
    num_layers = max(meta["depths"])
    ok = True
    with open(results, "a") as out:
        for d in meta["depths"]:
            files = {k: reference_path(model_dir, k, d) for k in REFERENCES}
            files["ferrum"] = ferrum.replace("{depth}", str(d))
            row = {"model": name, "depth": d, "layers": num_layers,
                   **depth_row(per_row(files, len(kinds), meta["vocabSize"], device), kinds)}
            if d == num_layers:
                row.update(verdict(row, len(kinds)))
                ok = row["pass"]
            out.write(json.dumps(row) + "\n")
            f32, bf16, eager, vs_bf16 = (row[k] for k in ("ferrumVsF32", "bf16VsF32", "eagerVsF32", "ferrumVsBf16"))
            print(f"{name} depth {d:>2}, {len(kinds)} rows: relL2 vs f32 ferrum {f32['meanRelL2']:.4f} bf16 "
                  f"{bf16['meanRelL2']:.4f} eager {eager['meanRelL2']:.4f} | KL(f32||.) ferrum {f32['meanKL']:.2e} "
                  f"bf16 {bf16['meanKL']:.2e} eager {eager['meanKL']:.2e} | top1 vs f32 ferrum {pct(f32['top1'])} "
                  f"bf16 {pct(bf16['top1'])} | vs bf16: KL(bf16||ferrum) {vs_bf16['meanKL']:.2e} "
                  f"top1 {pct(vs_bf16['top1'])}", flush=True)
            if d == num_layers:
                report(name, row)
    return ok
