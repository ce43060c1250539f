#!/bin/sh
# Answers init, then never answers time: the runner must be stoppable.
while IFS= read -r line <&3; do
	id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
	case "$line" in
	*'"op":"init"'*)
		printf '{"event":"ready","id":%s,"protocol":1,"timer":"perf_counter","flush_bytes":0,"device":{"kind":"cpu","name":"sh"}}\n' "$id" >&4 ;;
	*'"op":"models"'*)
		printf '{"event":"models","id":%s}\n' "$id" >&4 ;;
	*'"op":"time"'*)
		echo "sleeping as pid $$"
		sleep 600 ;;
	*)
		exit 0 ;;
	esac
done
