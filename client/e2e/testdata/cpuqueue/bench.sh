#!/bin/sh
# Speaks the harness protocol (runner/harness/PROTOCOL.md) with sh's
# builtins and printf alone, as busybox has them: canned figures.
while IFS= read -r line <&3; do
	id=${line#*\"id\":}
	id=${id%%[!0-9]*}
	case "$line" in
	*'"op":"init"'*)
		printf '{"event":"ready","id":%s,"protocol":1,"timer":"perf_counter","flush_bytes":0,"device":{"kind":"cpu","name":"sh"}}\n' "$id" >&4 ;;
	*'"op":"models"'*)
		printf '{"event":"models","id":%s}\n' "$id" >&4 ;;
	*'"op":"time"'*)
		printf '{"event":"samples","id":%s,"samples_ms":[1.5,1.25,1.0,1.0,1.25],"warmup_calls":1,"warmup_ms":1,"timer":"perf_counter"}\n' "$id" >&4 ;;
	*'"op":"exit"'*)
		exit 0 ;;
	*)
		printf '{"event":"error","id":%s,"kind":"exception","message":"unknown op"}\n' "${id:-0}" >&4 ;;
	esac
done
