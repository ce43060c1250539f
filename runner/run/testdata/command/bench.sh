#!/bin/sh
# A non-Python benchmark: it speaks the harness protocol on fds 3 and 4
# (runner/harness/PROTOCOL.md). Implementation "slow" takes 2 ms per call,
# "fast" 1 ms; the figures are canned, the protocol is real.
ms=1.0
[ "$XRUN_IMPL" = slow ] && ms=2.0
while IFS= read -r line <&3; do
	id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
	case "$line" in
	*'"op":"init"'*)
		printf '{"event":"ready","id":%s,"protocol":1,"timer":"perf_counter","flush_bytes":0,"device":{"kind":"cpu","name":"sh"}}\n' "$id" >&4 ;;
	*'"op":"models"'*)
		printf '{"event":"models","id":%s,"flops":2e9}\n' "$id" >&4 ;;
	*'"op":"time"'*)
		echo "timing $XRUN_IMPL"
		printf '{"event":"samples","id":%s,"samples_ms":[%s,%s,%s,%s,%s],"warmup_calls":1,"warmup_ms":1,"timer":"perf_counter"}\n' "$id" $ms $ms $ms $ms $ms >&4 ;;
	*'"op":"exit"'*)
		exit 0 ;;
	*)
		printf '{"event":"error","id":%s,"kind":"exception","message":"unsupported command"}\n' "${id:-0}" >&4 ;;
	esac
done
