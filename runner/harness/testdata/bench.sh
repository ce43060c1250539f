#!/bin/sh
# A benchmark that is not Python: it reads commands on fd 3 and answers on
# fd 4, as PROTOCOL.md describes. The figures are canned.
while IFS= read -r line <&3; do
	id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
	case "$line" in
	*'"op":"init"'*)
		echo "bench: got init" >&2
		printf '{"event":"ready","id":%s,"protocol":1,"timer":"perf_counter","flush_bytes":0,"device":{"kind":"cpu","name":"sh"}}\n' "$id" >&4 ;;
	*'"op":"models"'*)
		printf '{"event":"models","id":%s,"flops":2e9}\n' "$id" >&4 ;;
	*'"op":"check"'*)
		printf '{"event":"correctness","id":%s,"passed":true,"trials":3,"seeds":[1,2,3],"max_abs_error":0,"max_rel_error":0,"rms_rel_error":0,"mismatch_fraction":0,"nan_mismatches":0,"inf_mismatches":0,"inputs_modified":false,"replayed":false,"tolerance":{"atol":0,"rtol":0}}\n' "$id" >&4 ;;
	*'"op":"time"'*)
		echo "this line goes to stdout and must not break anything"
		printf '{"event":"samples","id":%s,"samples_ms":[1.5,1.25,1.0],"warmup_calls":1,"warmup_ms":1,"timer":"perf_counter"}\n' "$id" >&4 ;;
	*'"op":"exit"'*)
		exit 0 ;;
	*)
		printf '{"event":"error","id":%s,"kind":"exception","message":"unknown op"}\n' "${id:-0}" >&4 ;;
	esac
done
