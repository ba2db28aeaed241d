# Sourced by new_level.sh and transfer_check.sh: measure_heldout DIR measures the judged networks
# both scripts share, 15 held-out networks of each space (seed 4242) and data/onnx, into DIR
# (heldout_SPACE.csv, onnx.csv). Needs $cli, $runner and $device.
measure_heldout() {  # DIR
  for space in nb201 fbnet ofa vit kws; do
    "$cli" measure --runner "$runner" --device "$device" --space $space --sample 15 --seed 4242 \
      --out "$1/heldout_$space.csv" > /dev/null
  done
  "$cli" measure --runner "$runner" --device "$device" --out "$1/onnx.csv" data/onnx/*.onnx > /dev/null
}
