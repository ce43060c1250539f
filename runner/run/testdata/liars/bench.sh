#!/bin/sh
# A command benchmark whose implementations lie and shout (PROTOCOL.md):
# "honest" takes 1 ms per call; "huge" reports 1e300 ms, "tiny" 1e-300
# ms (a throughput over it is infinite); "ctl" fails with escape sequences
# and BELs in its message; "long" fails with a message of 300 KB.
ms=1.0
[ "$XRUN_IMPL" = huge ] && ms=1e300
[ "$XRUN_IMPL" = tiny ] && ms=1e-300
while IFS= read -r line <&3; do
	id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
	case "$line" in
	*'"op":"init"'*)
		printf '{"event":"ready","id":%s,"protocol":1,"timer":"perf_counter","flush_bytes":0,"device":{"kind":"cpu","name":"sh"}}\n' "$id" >&4 ;;
	*'"op":"models"'*)
		printf '{"event":"models","id":%s,"flops":2e9}\n' "$id" >&4 ;;
	*'"op":"time"'*)
		case "$XRUN_IMPL" in
		ctl)
			printf '{"event":"error","id":%s,"kind":"exception","where":"fn","message":"RuntimeError: \\u001b[31mred\\u001b[0m \\u0007bell \\u001b]0;title\\u0007end"}\n' "$id" >&4 ;;
		long)
			msg=$(head -c 300000 /dev/zero | tr '\0' A)
			printf '{"event":"error","id":%s,"kind":"exception","where":"fn","message":"RuntimeError: %sEND","traceback":"Traceback\\n%sEND"}\n' "$id" "$msg" "$msg" >&4 ;;
		*)
			printf '{"event":"samples","id":%s,"samples_ms":[%s,%s,%s,%s,%s],"warmup_calls":1,"warmup_ms":1,"timer":"perf_counter"}\n' "$id" $ms $ms $ms $ms $ms >&4 ;;
		esac ;;
	*'"op":"exit"'*)
		exit 0 ;;
	*)
		printf '{"event":"error","id":%s,"kind":"exception","message":"unsupported command"}\n' "${id:-0}" >&4 ;;
	esac
done
