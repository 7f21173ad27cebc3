#!/usr/bin/env bash
# Compares the ABI tables of the CUDA toolkit's nccl.h and Chorus's (abi_table.cpp built
# against each): any difference in an enum value, struct layout, macro or function type
# fails, and so does a table that came out short.
set -euo pipefail
reference=$("$1")
ours=$("$2")
rows=$(wc -l <<<"$reference")
if (( rows < 180 )); then
  echo "FAIL: the reference table has only $rows rows"; exit 1
fi
if ! diff <(echo "$reference") <(echo "$ours"); then
  echo "FAIL: Chorus's nccl.h differs from the CUDA toolkit's (< toolkit, > Chorus)"; exit 1
fi
echo "nccl.h ABI: $rows rows identical to the CUDA toolkit's"
