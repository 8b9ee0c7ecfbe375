#!/usr/bin/env bash
# experiments/test_h200_model.sh BIN_DIR: exp_h200_model on a results folder in the format of
# experiments/gpu/bench_sdpa.py (rows carry the registry's launch configuration), written here
# into a temporary folder (ctest exp_h200_model_config). The launch configurations are test
# inputs, not measurements. Checks, on the written model.csv:
#   - each variant is modeled with the tile, occupancy and grid order of its own row (two rows of
#     one problem with different configurations get different predictions);
#   - v02's bh_major_chunks and an unknown order are reported as not modeled, with no prediction;
#   - a row without the config columns (an older run) and an error row get no prediction;
#   - only the run named in CANONICAL is modeled (--runs all takes the other one too).
#   - backward rows (pass bwd) are modeled with the backward registry's dQ mode and the row's
#     tile; fwdbwd rows are not modeled; an order other than kv_bh_major is reported.
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
h=$tmp/h200
mkdir -p "$h/new" "$h/old"
printf 'bench new\n' > "$h/CANONICAL"
cols=impl,study,dtype,head_dim,causal,seqlen,batch,heads,sample,status,ms,br,bc,stages,threads,smem_bytes,ctas_per_sm,grid_order,launches,splits,error
{
  echo "$cols"
  p=bf16,128,0,1024,16,16
  echo "ioattn:v01_naive,bench,$p,0,ok,150,0,0,1,256,0,4,rows_strided,3,0,"
  echo "ioattn:v02_fa1,bench,$p,0,ok,18,64,64,1,128,65536,2,bh_major_chunks,1,0,"
  echo "ioattn:v03_fa2_scalar,bench,$p,0,ok,9,32,32,1,256,50000,2,bh_major,1,0,"
  echo "ioattn:v03_fa2_scalar,bench,$p,1,ok,9.1,32,32,1,256,50000,2,bh_major,1,0,"
  echo "ioattn:v03b_splitkv_scalar,bench,$p,0,ok,9,32,32,1,256,50000,2,bh_major_splits,2,4,"
  echo "ioattn:v04_fa2_mma,bench,$p,0,ok,1,64,64,1,128,50000,2,qblock_major,1,0,"
  echo "ioattn:v05_fa2_fast,bench,$p,0,ok,1,64,64,2,128,70000,2,bh_major,1,0,"
  echo "ioattn:v06_fa2_wgmma,bench,$p,0,ok,0.5,128,128,2,384,160000,1,qblock_major_rev,1,0,"
  echo "ioattn:v06_fa2_wgmma,bench,bf16,128,0,4096,4,16,0,ok,2,128,128,2,384,160000,1,zigzag,1,0,"
  echo "ioattn:v05_fa2_fast,bench,bf16,128,1,4096,4,16,0,skipped,,,,,,,,,,,\"time cap, reached\""
  echo "sdpa:flash,bench,$p,0,ok,0.5,,,,,,,,,,"
} > "$h/new/bench.csv"
printf 'impl,dtype,head_dim,causal,seqlen,batch,heads,ms\nioattn:v04_fa2_mma,bf16,128,0,1024,16,16,1\n' > "$h/old/bench.csv"
# Backward rows (bench.csv's pass column; a backward_config: K/V-outer tile, kv_bh_major): the atomic
# and the separate-dQ variant of one rung on one problem, a fwdbwd row and an unknown order.
{
  echo "impl,pass,dtype,head_dim,causal,seqlen,batch,heads,sample,status,ms,br,bc,stages,threads,ctas_per_sm,grid_order,launches,splits,error"
  echo "ioattn:bwd02_fa2_mma,bwd,bf16,128,0,1024,16,16,0,ok,2.7,32,64,1,128,2,kv_bh_major,3,0,"
  echo "ioattn:bwd02b_fa2_mma_dqpass,bwd,bf16,128,0,1024,16,16,0,ok,2.4,32,64,1,128,2,kv_bh_major,3,0,"
  echo "ioattn:bwd02_fa2_mma,fwdbwd,bf16,128,0,1024,16,16,0,ok,3.1,32,64,1,128,2,kv_bh_major,3,0,"
  echo "ioattn:bwd01_fa2_scalar,bwd,bf16,128,0,1024,16,16,0,ok,40,32,32,1,256,2,zigzag,3,0,"
} > "$h/new/bwd.csv"
fail=0
"$bin/exp_h200_model" --h200 "$h" --out "$tmp/r" --check || { echo "FAIL: exp_h200_model --check exited $?"; fail=1; }
"$bin/exp_h200_model" --h200 "$h" --out "$tmp/all" --runs all --check >/dev/null || { echo "FAIL: --runs all"; fail=1; }
/usr/bin/python3 - "$tmp/r/sim/h200_model/model.csv" "$tmp/all/sim/h200_model/model.csv" <<'PY' || fail=1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
every = list(csv.DictReader(open(sys.argv[2])))
bad = []
def expect(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what)
    if not ok:
        bad.append(what)
by = {}
for r in rows:
    by.setdefault(r["variant"], []).append(r)
ok = {v: [r for r in rs if r["model_status"] == "ok"] for v, rs in by.items()}
expect({r["run"] for r in rows} == {"new"}, "only the run named in CANONICAL is modeled")
expect({r["run"] for r in every} == {"new", "old"}, "--runs all models every run")
expect([r["model_status"] for r in every if r["run"] == "old"] == ["no launch config in the measured row (br, bc, ctas_per_sm, grid_order)"],
       "a row without config columns is reported as such")
expect(all(r["hbm_read_bytes"] == "" for r in every if r["model_status"] != "ok"), "rows not modeled carry no prediction")
expect(len(by["v03"]) == 1, "the two samples of one configuration give one model row")
expect(len(ok["v01"]) == 1 and ok["v01"][0]["config_source"].startswith("none"), "v01 (unfused) is modeled without a launch config")
expect(not ok["v02"] and by["v02"][0]["model_status"].startswith("grid order bh_major_chunks not modeled"), "v02's bh_major_chunks is not modeled")
for v in ("v03", "v03b", "v04", "v05"):
    expect(len(ok[v]) == 1, f"{v} is modeled")
expect(ok["v03b"][0]["splits"] == "4" and ok["v03b"][0]["strategy"] == "splitkv", "v03b is split-KV with the row's 4 splits")
expect(ok["v04"][0]["grid_order"] == "qblock_major" and ok["v05"][0]["grid_order"] == "bh_major", "grid orders come from the rows")
expect(ok["v04"][0]["hbm_read_bytes"] != ok["v05"][0]["hbm_read_bytes"], "same tile, different grid order: different predicted bytes")
expect(int(ok["v04"][0]["hbm_read_bytes"]) > int(ok["v04"][0]["hbm_read_bytes_bh_major"]), "qblock_major reads more than bh_major would (256 heads)")
expect(ok["v05"][0]["ctas_per_cu_model"] == "2", "the occupancy is the row's ctas_per_sm")
v06 = {r["seqlen"]: r for r in by["v06"]}
expect(v06["1024"]["model_status"] == "ok" and v06["1024"]["br"] == "128", "v06 is modeled with its 128 x 128 tile")
expect(v06["4096"]["model_status"] == "grid order zigzag not modeled by the simulator", "an unknown order is reported")
expect(v06["1024"]["hbm_read_bytes"] != ok["v04"][0]["hbm_read_bytes"], "v04 and v06 get different predictions")
skipped = [r for r in by["v05"] if r["model_status"] != "ok"]
expect(len(skipped) == 1 and skipped[0]["model_status"].startswith("not measured"), "a skipped row is not modeled")
expect("sdpa" not in {r["impl"].split(":")[0] for r in rows}, "SDPA rows are not modeled")
bwd = {r["variant"]: r for r in rows if r["pass"] == "bwd"}
expect(set(bwd) == {"bwd02", "bwd02b", "bwd01"}, "backward rows are modeled, fwdbwd rows are not (one row per bwd point)")
expect(all(r["pass"] == "fwd" and r["dq_mode"] == "" for r in rows if not r["variant"].startswith("bwd")),
       "forward rows carry pass fwd and no dq_mode")
a, s = bwd.get("bwd02", {}), bwd.get("bwd02b", {})
expect(a.get("model_status") == "ok" and s.get("model_status") == "ok", "both dQ modes of a rung are modeled")
expect(a.get("dq_mode") == "atomic" and s.get("dq_mode") == "separate", "the dQ mode comes from the backward registry")
expect(a.get("br") == "32" and a.get("bc") == "64" and a.get("grid_order") == "kv_bh_major", "the tile and order come from the row")
expect(int(a.get("hbm_write_bytes") or 0) > int(s.get("hbm_write_bytes") or 0),
       "atomic dQ writes more than the separate pass (the fp32 dQ accumulator's read-modify-writes)")
expect(a.get("hbm_compulsory_read_bytes") == s.get("hbm_compulsory_read_bytes") != "", "one problem, one compulsory read")
expect(bwd.get("bwd01", {}).get("model_status") == "grid order zigzag not modeled by the simulator",
       "a backward order other than kv_bh_major is reported, not modeled")
sys.exit(1 if bad else 0)
PY
exit $fail
