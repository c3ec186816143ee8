#!/bin/bash
# motion_cli.sh ADJOINT: `adjoint motion build` / `info` on short clips cut from two shared LAFAN1 clips (skipped,
# 77, without them or the G1 model): a good build and its summary; malformed rows, missing clips, bad manifests
# and bad options exit 2 naming the file and line (or option) and write nothing; an existing output survives a
# failed build; damaged or foreign files given to info exit 2 naming the file.
set -u
A=$1
source "$(dirname "$0")/expect.sh"
if ! SRC=$(asset_dir lafan1_g1/walk4_subject1.csv.gz lafan1_g1/fallAndGetUp3_subject1.csv.gz g1/scene_flat.xml); then
  echo "motion_cli: LAFAN1 clips or G1 model not on the asset path: skipped"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# two clips of 40 and 31 frames (30 fps: 1.3 s -> 66 frames, 1.0 s -> 51 frames at 50 Hz)
mkdir "$T/good"
zcat "$SRC/lafan1_g1/walk4_subject1.csv.gz" | head -40 >"$T/good/walk.csv"
zcat "$SRC/lafan1_g1/fallAndGetUp3_subject1.csv.gz" | head -31 >"$T/good/fall.csv"
printf 'file\tframes\n walk.csv\t40\nfall.csv\t31\n' | sed 's/^ //' >"$T/good/MANIFEST.tsv"
expect 0 "2 clips, 117 frames .* 30 bodies, 29 joints" "$A" motion build "$T/good" -o "$T/lib.h5"
expect 0 "walk.csv +0 +66 +1.30" "$A" motion info "$T/lib.h5"
expect 0 "fall.csv +66 +51 +1.00" "$A" motion info "$T/lib.h5"
expect 0 "bodies: pelvis .*torso_link" "$A" motion info "$T/lib.h5"
expect 0 "adaptive sampling: 4 bins" "$A" motion info "$T/lib.h5"  # 66 // 50 + 1 + 51 // 50 + 1
expect 0 "2 clips, 71 frames .* 30 fps" "$A" motion build "$T/good" -o "$T/lib30.h5" --fps 30 --model g1/scene_flat.xml
cp "$T/lib.h5" "$T/keep.h5"

# a failed build: exit 2 naming the file (and line); the existing output untouched, no temp left behind
bad() {  # bad NAME: a copy of the good clips to damage
  rm -rf "$T/$1"
  cp -r "$T/good" "$T/$1"
}
bad row
sed -i '7s/^[^,]*,/abc,/' "$T/row/fall.csv"
expect 2 "fall.csv:7: column 1: not a number" "$A" motion build "$T/row" -o "$T/lib.h5"
bad cols
sed -i '12s/,[^,]*$//' "$T/cols/walk.csv"
expect 2 "walk.csv:12: expected 36 columns, found 35" "$A" motion build "$T/cols" -o "$T/lib.h5"
bad nan
sed -i '3s/^[^,]*,/nan,/' "$T/nan/walk.csv"
expect 2 "walk.csv:3: column 1: non-finite" "$A" motion build "$T/nan" -o "$T/lib.h5"
bad quat
sed -i '5s/^\([^,]*,[^,]*,[^,]*,\)[^,]*,[^,]*,[^,]*,[^,]*,/\10,0,0,0,/' "$T/quat/fall.csv"
expect 2 "fall.csv:5: root quaternion has zero norm" "$A" motion build "$T/quat" -o "$T/lib.h5"
bad missing
rm "$T/missing/fall.csv"
expect 2 "fall.csv: cannot open" "$A" motion build "$T/missing" -o "$T/lib.h5"
bad count
sed -i 's/^fall.csv\t31/fall.csv\t32/' "$T/count/MANIFEST.tsv"
expect 2 "fall.csv: 31 frames, but .*MANIFEST.tsv:3 lists 32" "$A" motion build "$T/count" -o "$T/lib.h5"
bad manifest
printf 'walk.csv 40\n' >>"$T/manifest/MANIFEST.tsv"
expect 2 "MANIFEST.tsv:4: expected 'file<TAB>frames" "$A" motion build "$T/manifest" -o "$T/lib.h5"
bad empty
head -1 "$T/good/MANIFEST.tsv" >"$T/empty/MANIFEST.tsv"
expect 2 "MANIFEST.tsv: lists no clips" "$A" motion build "$T/empty" -o "$T/lib.h5"
expect 2 "nodir/MANIFEST.tsv: not found" "$A" motion build "$T/nodir" -o "$T/lib.h5"
# the model's joints decide the columns: the hopper has no free joint
expect 2 "hopper.* (free joint|nq)|expected .* columns" "$A" motion build "$T/good" -o "$T/lib.h5" --model hopper/hopper.xml
expect 2 "no_such.xml: model not found" "$A" motion build "$T/good" -o "$T/lib.h5" --model no_such.xml
check "lib.h5 changed by failed builds" cmp -s "$T/lib.h5" "$T/keep.h5"
check "a temporary file left behind" test -z "$(ls "$T" | grep tmp)"

# options and output paths
expect 2 "-o FILE.h5 is required" "$A" motion build "$T/good"
expect 2 "option --fps: 'x' is not a frame rate" "$A" motion build "$T/good" -o "$T/x.h5" --fps x
expect 2 "option --fps: '0' is not a frame rate" "$A" motion build "$T/good" -o "$T/x.h5" --fps 0
expect 2 "option --model needs a value" "$A" motion build "$T/good" -o "$T/x.h5" --model
expect 2 "unknown option '--frobnicate'" "$A" motion build "$T/good" -o "$T/x.h5" --frobnicate
expect 2 "more than one clip directory" "$A" motion build "$T/good" "$T/row" -o "$T/x.h5"
expect 2 "is the input .*MANIFEST.tsv" "$A" motion build "$T/good" -o "$T/good/MANIFEST.tsv"
expect 2 "is a directory" "$A" motion build "$T/good" -o "$T/good"
expect 2 "unknown subcommand 'frob'" "$A" motion frob
check "x.h5 written by a refused command" test ! -e "$T/x.h5"

# info on files that are not a good library
expect 2 "MANIFEST.tsv: not an HDF5 file" "$A" motion info "$T/good/MANIFEST.tsv"
head -c 4096 "$T/lib.h5" >"$T/trunc.h5"
expect 2 "trunc.h5: " "$A" motion info "$T/trunc.h5"
expect 2 "absent.h5: cannot open" "$A" motion info "$T/absent.h5"
expect 2 "expected one FILE.h5" "$A" motion info

if [ "$fails" != 0 ]; then
  echo "motion_cli: $fails of $n checks failed"
  exit 1
fi
echo "motion_cli: all $n checks passed"
