#!/usr/bin/env python3
"""fuzz.py: hostile input for the adjoint CLI, from a fixed seed (the same cases on every run).

  tests/fuzz.py --full ADJOINT CKPT_POKE      >= 1000 configs, >= 300 models, >= 200 checkpoint variants
  tests/fuzz.py --ci ADJOINT CKPT_POKE        a subset (CI: >= 100 cases in about a minute)
  options: --seed S (default 20261204), --configs N --models N --checkpoints N, --jobs J, --keep DIR

Three families, each a mutation of something valid:
  configs      the presets in configs/ as YAML (values from a pool of wrong types, out-of-range and boundary
               numbers, over-long tokens, bytes; deleted, duplicated, renamed keys; truncated files) or as
               section.key=value overrides; each runs `adjoint train ... --max-iterations 1` on 2 worlds
  models       our MJCF models in assets/test (numeric attributes replaced, elements dropped or doubled,
               files cut, bytes inserted); each runs `adjoint verify MODEL --states 2 --no-grad`
  checkpoints  checkpoints of three short runs with flipped or cut bytes, appended garbage, values changed in
               valid HDF5 (tests/ckpt_poke.c: NaN, inf, negative, huge) or datasets deleted; each runs one of
               `eval`, `export --blob`, `train --resume`
Outcomes: success (exit 0), clean error (exit 2, or exit 1 from a runtime failure, with a message on stderr),
crash (a signal or another exit code, or exit 1/2 without a message), hang (no exit within the timeout), and
silent truncation (an over-long value whose true reading is out of range, accepted with exit 0). The script
exits 1 when any crash, hang or silent truncation is found, and prints the counts.
"""
import argparse
import concurrent.futures as cf
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# values that each parser must classify: wrong types, boundaries, non-finite, huge, odd encodings
VALUE_POOL = [
    "-1", "0", "1", "2", "3", "7", "-0", "1.5", "-2.5", "1e-300", "1e300", "1e999", "-1e999", "nan", "NaN", "inf",
    "-inf", ".inf", "0x10", "1e3", "65536", "65537", "1048576", "1048577", "16777216", "2147483648",
    "9223372036854775807", "9223372036854775808", "-9223372036854775809", "true", "false", "yes", "null", "~", "",
    "''", '""', "abc", "[1, 2]", "[]", "{a: 1}", "[[1]]", "[1, -2]", "[0]", "[64, 64, 64, 64, 64, 64, 64, 64, 64]",
    "ppo", "shac", "nablamimic", "cartpole", "hopper", "cuda", "cpu", "elu", "tanh", "linear", "fixed",
    "\u00e9\u00e8", "a: b", "&a 1", "*a", "!!str 5", "1 2", "0.0", "1.0", "0.99", "1e-8", "100000", "100001",
    "gear_scale=5", "gear_scale=0", "gear_scale=-1", "gear_scale=nan", "forward_weight=1e308", "x=1", "=", "a=b=c",
]
# keys whose value sets the cost of one iteration: capped by overrides after the fuzzed file is read (the file's
# value is still parsed and range-checked first), so that a valid but huge value is not taken for a hang
CAPS = ["algo.horizon=4", "ppo.epochs=1", "ppo.minibatches=1", "shac.critic_iterations=1",
        "shac.critic_minibatches=1", "run.eval_episodes=0", "env.episode_steps=50", "run.tensorboard=false"]
# keys whose over-long values the probes try (integers hide 20 nines behind zeros: out of every range)
PROBE_KEYS = ("actor_hidden", "critic_hidden", "params", "num_envs", "horizon", "epochs", "minibatches",
              "critic_iterations", "seed", "episode_steps", "max_iterations", "checkpoint_every", "activation")
PRESETS = ["cartpole_ppo.yaml", "cartpole_shac.yaml", "cartpole_nablamimic.yaml", "hopper_ppo.yaml",
           "hopper_shac.yaml", "hopper_nablamimic.yaml"]


def run(cmd, timeout, cwd=ROOT, env=None):
    """(outcome, rc, stderr tail): outcome success | clean | crash | hang"""
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout,
                           env=env)
    except subprocess.TimeoutExpired:
        return "hang", None, ""
    err = p.stderr.decode("utf-8", "replace").strip()
    if p.returncode == 0:
        return "success", 0, err[-300:]
    if p.returncode in (1, 2) and err:
        return "clean", p.returncode, err[-300:]
    return "crash", p.returncode, err[-300:]


# ---- configs ----
def yaml_lines(text):
    return text.split("\n")


def mutate_config(rng, text):
    """returns (new text, overrides, expect_refusal): expect_refusal when a long token hides an out-of-range
    value (exit 0 there is a silent truncation)"""
    lines = yaml_lines(text)
    overrides = []
    expect_refusal = False
    probe_lines = []  # the long-value lines written
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        value_lines = [i for i, l in enumerate(lines) if re.match(r"^\s+\w+:\s*\S", l)]
        kind = rng.random()
        if kind < 0.40 and value_lines:  # a value from the pool
            i = rng.choice(value_lines)
            key = lines[i].split(":")[0]
            lines[i] = "%s: %s" % (key, rng.choice(VALUE_POOL))
        elif kind < 0.55 and value_lines:  # an over-long token hiding an out-of-range value
            candidates = [i for i in value_lines if lines[i].split(":")[0].strip() in PROBE_KEYS]
            if not candidates:
                continue
            i = rng.choice(candidates)
            key = lines[i].split(":")[0]
            k = key.strip()
            zeros = "0" * rng.choice([61, 62, 63, 64, 100, 115, 120, 200, 255, 256, 300, 1100])
            if k in ("actor_hidden", "critic_hidden"):
                lines[i] = "%s: [%s6400000, 32]" % (key, zeros)
            elif k == "params":
                lines[i] = '%s: "gear_scale=%s1000"' % (key, zeros)
            elif k == "activation":
                lines[i] = "%s: elu%s" % (key, "u" * rng.choice([29, 40, 300]))  # an enum cut at 31 reads elu..
            else:
                lines[i] = "%s: %s%s" % (key, zeros, "9" * 20)  # above every integer key's range
            probe_lines.append(lines[i])  # checked at the end: a later mutation may cut or change it
        elif kind < 0.62 and value_lines:  # delete a key
            del lines[rng.choice(value_lines)]
        elif kind < 0.64 and value_lines:  # duplicate a line
            i = rng.choice(value_lines)
            lines.insert(i, lines[i])
        elif kind < 0.70 and value_lines:  # rename a key
            i = rng.choice(value_lines)
            key, _, val = lines[i].partition(":")
            lines[i] = key + rng.choice(["x", "_", "s", "." "a"]) + ":" + val
        elif kind < 0.75:  # indentation
            i = rng.randrange(len(lines))
            lines[i] = rng.choice(["", " ", "    ", "\t"]) + lines[i]
        elif kind < 0.80:  # truncate the file
            t = "\n".join(lines)
            t = t[: rng.randrange(len(t) + 1)]
            lines = yaml_lines(t)
        elif kind < 0.85:  # random bytes
            t = "\n".join(lines)
            p = rng.randrange(len(t) + 1)
            junk = "".join(chr(rng.choice([0x09, 0x0A, 0x20, 0x22, 0x27, 0x3A, 0x5B, 0x7B, 0x7D, 0x26, 0x2A, 0x21,
                                           0x7C, 0x3E, 0x25, 0x40, 0x60, 0xE9, 0x2D, 0x23, 0x01, 0x7F])) for _ in
                           range(rng.randint(1, 6)))
            lines = yaml_lines(t[:p] + junk + t[p:])
        else:  # an override instead of the file
            key = rng.choice(CFG_KEYS)
            overrides.append("%s=%s" % (key, rng.choice(VALUE_POOL)))
            if rng.random() < 0.15 and key in ("policy.actor_hidden", "policy.critic_hidden"):
                overrides[-1] = "%s=[%s6400000, 32]" % (key, "0" * rng.choice([61, 64, 200, 1100]))
                expect_refusal = True
            if rng.random() < 0.15 and key == "env.params":
                overrides[-1] = "env.params=gear_scale=%s1000" % ("0" * rng.choice([115, 127, 200]))
                expect_refusal = True
    expect_refusal = expect_refusal or any(p in lines for p in probe_lines)
    return "\n".join(lines), overrides, expect_refusal


CFG_KEYS = []


def load_keys(adjoint):
    out = subprocess.run([adjoint, "train", "--help"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    for line in out.decode().split("\n"):
        m = re.match(r"^\s+([a-z_]+\.[a-z_0-9]+)\s", line)
        if m:
            CFG_KEYS.append(m.group(1))
    if not CFG_KEYS:
        CFG_KEYS.extend(["env.num_envs", "algo.horizon", "policy.actor_hidden", "env.params"])


def config_case(args, rng, i, work):
    preset = rng.choice(PRESETS)
    with open(os.path.join(ROOT, "configs", preset)) as f:
        text = f.read()
    text, overrides, expect_refusal = mutate_config(rng, text)
    d = os.path.join(work, "cfg%05d" % i)
    os.makedirs(d)
    path = os.path.join(d, "c.yaml")
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    cmd = [args.adjoint, "train", path] + overrides + CAPS + ["--max-iterations", "1", "--num-envs", "2",
                                                              "--run-dir", os.path.join(d, "run"), "--quiet"]
    outcome, rc, err = run(cmd, args.timeout)
    if outcome == "success" and expect_refusal:
        outcome = "truncation"
    shutil.rmtree(d, ignore_errors=True) if outcome in ("success", "clean") else None
    return outcome, "config %d (%s%s): exit %s %s" % (i, preset, " " + " ".join(overrides) if overrides else "", rc,
                                                     err.split("\n")[-1][:200]), expect_refusal


# ---- models ----
NUM = re.compile(r'(\w+)="([-+0-9.eE ]+)"')
MODEL_VALUES = ["1e300", "-1e300", "0", "-1", "nan", "inf", "-inf", "1e-300", "1e38", "1e39", "", "abc", "1 2",
                "0 0 0", "0 0 0 0", "1e999", "99999999999", "-0", "0 0 1 0", "1e-30 1e-30 1e-30"]


def mutate_model(rng, text):
    for _ in range(rng.choice([1, 1, 2, 3])):
        kind = rng.random()
        nums = list(NUM.finditer(text))
        if kind < 0.55 and nums:
            m = rng.choice(nums)
            vals = m.group(2).split()
            if rng.random() < 0.5 and len(vals) > 1:
                vals[rng.randrange(len(vals))] = rng.choice(MODEL_VALUES[:10])
                new = " ".join(vals)
            else:
                new = rng.choice(MODEL_VALUES)
            text = text[: m.start(2)] + new + text[m.end(2):]
        elif kind < 0.70:  # drop a line (an element or its closing tag)
            lines = text.split("\n")
            del lines[rng.randrange(len(lines))]
            text = "\n".join(lines)
        elif kind < 0.80:  # double a line
            lines = text.split("\n")
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif kind < 0.90:  # cut
            text = text[: rng.randrange(len(text) + 1)]
        else:  # bytes
            p = rng.randrange(len(text) + 1)
            text = text[:p] + "".join(rng.choice('<>"=/ \x00\x01&;x') for _ in range(rng.randint(1, 5))) + text[p:]
    return text


def model_case(args, rng, i, work, models):
    base = rng.choice(models)
    with open(base) as f:
        text = mutate_model(rng, f.read())
    d = os.path.join(work, "mdl%05d" % i)
    os.makedirs(d)
    path = os.path.join(d, "m.xml")
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    # in its own directory: MuJoCo writes MUJOCO_LOG.TXT into the working directory on warnings
    outcome, rc, err = run([args.adjoint, "verify", path, "--states", "2", "--no-grad"], args.timeout, cwd=d)
    shutil.rmtree(d, ignore_errors=True) if outcome in ("success", "clean") else None
    return outcome, "model %d (%s): exit %s %s" % (i, os.path.basename(base), rc, err.split("\n")[-1][:200]), False


# ---- checkpoints ----
CKPT_VALUES = ["nan", "inf", "-inf", "-1", "-5", "1e38", "1e300", "0", "1e12", "-1e-30", "3", "1e9", "1000000001"]


def base_runs(args, work):
    runs = []
    for preset, its in (("cartpole_nablamimic.yaml", 2), ("cartpole_ppo.yaml", 2), ("hopper_shac.yaml", 1)):
        d = os.path.join(work, "base_" + preset.split(".")[0])
        cmd = [args.adjoint, "train", "configs/" + preset, "--max-iterations", str(its), "run.checkpoint_every=1",
               "--num-envs", "8", "algo.horizon=8", "--run-dir", d, "--quiet"]
        if subprocess.run(cmd, cwd=ROOT).returncode != 0:
            sys.exit("fuzz: base run %s failed" % preset)
        ds = subprocess.run([args.poke, os.path.join(d, "ckpt_%06d.h5" % its), "--list"], stdout=subprocess.PIPE)
        names = [(l.split()[0], int(l.split()[1])) for l in ds.stdout.decode().split("\n") if l.strip()]
        runs.append((d, its, names))
    return runs


def checkpoint_case(args, rng, i, work, runs):
    rdir, its, names = rng.choice(runs)
    d = os.path.join(work, "ck%05d" % i)
    shutil.copytree(rdir, d)
    ck = os.path.join(d, "ckpt_%06d.h5" % its)
    kind = rng.random()
    what = ""
    if kind < 0.45:  # values in valid HDF5
        name, n = rng.choice(names)
        idx, val = rng.randrange(n), rng.choice(CKPT_VALUES)
        subprocess.run([args.poke, ck, name, str(idx), val], stderr=subprocess.DEVNULL)
        what = "%s[%d]=%s" % (name, idx, val)
    elif kind < 0.55:
        name, _ = rng.choice(names)
        subprocess.run([args.poke, ck, name, "--delete"], stderr=subprocess.DEVNULL)
        what = "delete %s" % name
    else:
        with open(ck, "rb") as f:
            data = bytearray(f.read())
        sub = rng.random()
        if sub < 0.5:
            for _ in range(rng.randint(1, 8)):
                p = rng.randrange(len(data))
                data[p] ^= 1 << rng.randrange(8)
            what = "flipped bits"
        elif sub < 0.85:
            data = data[: rng.randrange(len(data))]
            what = "cut at %d" % len(data)
        else:
            data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 4096)))
            what = "appended bytes"
        with open(ck, "wb") as f:
            f.write(data)
    op = rng.choice(["eval", "export", "resume"])
    if op == "eval":
        cmd = [args.adjoint, "eval", ck, "--episodes", "2"]
    elif op == "export":
        cmd = [args.adjoint, "export", ck, "--blob", os.path.join(d, "p.blob"), "--quiet"]
    else:
        cmd = [args.adjoint, "train", "--resume", d, "--max-iterations", str(its + 1), "--quiet"]
    outcome, rc, err = run(cmd, args.timeout)
    shutil.rmtree(d, ignore_errors=True) if outcome in ("success", "clean") else None
    return outcome, "checkpoint %d (%s, %s, %s): exit %s %s" % (i, os.path.basename(rdir), what, op, rc,
                                                                err.split("\n")[-1][:200]), False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ci", action="store_true")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("adjoint")
    ap.add_argument("poke")
    ap.add_argument("--seed", type=int, default=20261204)
    ap.add_argument("--configs", type=int)
    ap.add_argument("--models", type=int)
    ap.add_argument("--checkpoints", type=int)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float)
    ap.add_argument("--verbose", action="store_true", help="one line per case")
    ap.add_argument("--keep", help="directory for the failing cases (default: a temporary one, removed)")
    args = ap.parse_args()
    args.adjoint, args.poke = os.path.abspath(args.adjoint), os.path.abspath(args.poke)
    full = args.full and not args.ci
    nc = args.configs if args.configs is not None else (1000 if full else 50)
    nm = args.models if args.models is not None else (300 if full else 30)
    nk = args.checkpoints if args.checkpoints is not None else (200 if full else 30)
    if args.timeout is None:
        args.timeout = 120 if full else 60
    work = args.keep or tempfile.mkdtemp(prefix="adjoint-fuzz-")
    os.makedirs(work, exist_ok=True)
    load_keys(args.adjoint)
    models = sorted(os.path.join(ROOT, "assets", "test", f) for f in os.listdir(os.path.join(ROOT, "assets", "test"))
                    if f.endswith(".xml"))
    runs = base_runs(args, work)
    # every case draws from its own generator: a case is the same whatever runs beside it
    jobs = [("configs", config_case, (args, random.Random("c%d:%d" % (args.seed, i)), i, work)) for i in range(nc)]
    jobs += [("models", model_case, (args, random.Random("m%d:%d" % (args.seed, i)), i, work, models)) for i in range(nm)]
    jobs += [("checkpoints", checkpoint_case, (args, random.Random("k%d:%d" % (args.seed, i)), i, work, runs))
             for i in range(nk)]
    counts = {f: {"cases": 0, "success": 0, "clean": 0, "crash": 0, "hang": 0, "truncation": 0, "probes": 0}
              for f in ("configs", "models", "checkpoints")}
    bad = []
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        futs = [(fam, ex.submit(fn, *a)) for fam, fn, a in jobs]
        for fam, fu in futs:
            outcome, desc, probe = fu.result()
            counts[fam]["cases"] += 1
            counts[fam]["probes"] += probe
            counts[fam][outcome] += 1
            if args.verbose:
                print("%-10s %s" % (outcome, desc), flush=True)
            if outcome in ("crash", "hang", "truncation"):
                bad.append("%s: %s" % (outcome.upper(), desc))
    for b in bad:
        print(b)
    print("fuzz (seed %d): family cases success clean_error crash hang silent_truncation (of long-value probes)"
          % args.seed)
    for fam, c in counts.items():
        print("  %-11s %5d %7d %11d %5d %4d %17d (of %d)" % (fam, c["cases"], c["success"], c["clean"], c["crash"],
                                                            c["hang"], c["truncation"], c["probes"]))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
