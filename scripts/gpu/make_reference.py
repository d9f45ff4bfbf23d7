"""Random-weight model of a real shape + transformers reference logits for a mixed serving schedule.

Phase `make`: builds the model from a config.json with transformers' own init (seeded, on the GPU, bf16),
saves it with save_pretrained, defines a schedule (chunked prefill, a prefix-cache hit, decode steps) and
stores transformers' bf16 (sdpa) logits of every sampled row. Phase `compare`: reads Ferrum's logits for
the same rows (f32, row-major, written by run-schedule.ts) and prints mean KL and top-1 agreement.
"""
import argparse, json, os, sys, time
import torch
import torch.nn.functional as F


def schedule(vocab: int, gen: torch.Generator):
    rand = lambda n: torch.randint(0, vocab, (n,), generator=gen).tolist()
    a = rand(300)
    seqs = {
        "A": a + rand(6),
        "B": rand(180) + rand(6),
        "C": a[:128] + rand(72) + rand(6),  # shares A's first 128 tokens: prefilled from A's cached slots
        "D": rand(40) + rand(6),
    }
    steps = [
        [("A", 0, 256), ("B", 0, 180)],
        [("A", 256, 44), ("B", 180, 1), ("D", 0, 40)],
        [("C", 128, 72), ("A", 300, 1), ("B", 181, 1), ("D", 40, 1)],
    ]
    done = {"A": 301, "B": 182, "C": 200, "D": 41}
    for _ in range(5):
        steps.append([(s, done[s], 1) for s in ("A", "B", "C", "D")])
        for s in done:
            done[s] += 1
    return seqs, steps


def make(args):
    from transformers import AutoConfig, AutoModelForCausalLM
    os.makedirs(args.model, exist_ok=True)
    with open(args.config) as f:
        raw = json.load(f)
    config = AutoConfig.for_model(**raw)
    torch.manual_seed(args.seed)
    t0 = time.time()
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16, attn_implementation="sdpa")
    model.eval()
    model.save_pretrained(args.model)
    rotary = model.model.rotary_emb.inv_freq
    seqs, steps = schedule(config.vocab_size, torch.Generator().manual_seed(args.seed))
    rows = []
    with torch.no_grad():
        full = {name: model(torch.tensor([toks], device="cuda")).logits[0].float() for name, toks in seqs.items()}
    for step in steps:
        for name, start, count in step:
            rows.append(full[name][start + count - 1])
    torch.save(torch.stack(rows).cpu(), os.path.join(args.model, "reference-logits.pt"))
    with open(os.path.join(args.model, "schedule.json"), "w") as f:
        json.dump({"seqs": seqs, "steps": steps, "ropeFrequencies": "bf16" if rotary.dtype == torch.bfloat16 else "f32"}, f)
    print(f"made {args.model}: {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B params, "
          f"inv_freq {rotary.dtype}, {len(rows)} reference rows, {time.time() - t0:.1f} s", flush=True)


def compare(args):
    ref = torch.load(os.path.join(args.model, "reference-logits.pt")).double()
    got = torch.from_numpy(__import__("numpy").fromfile(args.ferrum, dtype="float32")).double().view(ref.shape)
    p_log = F.log_softmax(ref, dim=-1)
    q_log = F.log_softmax(got, dim=-1)
    kl = (p_log.exp() * (p_log - q_log)).sum(-1)
    top1 = (ref.argmax(-1) == got.argmax(-1)).double()
    max_err = (ref - got).abs().max(-1).values / (ref.max(-1).values - ref.min(-1).values)
    result = {
        "model": os.path.basename(args.model.rstrip("/")), "rows": ref.shape[0],
        "meanKL": kl.mean().item(), "maxKL": kl.max().item(), "top1": top1.mean().item(),
        "maxAbsErrOverRange": max_err.max().item(),
    }
    ok = result["meanKL"] < 1e-3 and result["top1"] >= 0.99
    print(json.dumps(result), "PASS" if ok else "FAIL", flush=True)
    with open(args.results, "a") as f:
        f.write(json.dumps({**result, "pass": ok}) + "\n")
    return ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("phase", choices=["make", "compare"])
    parser.add_argument("--config")
    parser.add_argument("--model", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ferrum")
    parser.add_argument("--results")
    args = parser.parse_args()
    if args.phase == "make":
        make(args)
    else:
        sys.exit(0 if compare(args) else 1)
