#!/usr/bin/env bash
# tests/check_layers.sh - which folder may include which (README, "The source, in
# reading order"): each folder below may include only the folders after its name.
#   common/    common/
#   artifacts/ artifacts/ common/          (the documents know nothing of jobs)
#   contract/limits.*, contract/errors.*   common/   (the contract's bottom)
#   exec/      exec/ common/ contract/limits.h contract/errors.h
#                                          (the sandbox knows nothing of its payload)
#   contract/  contract/ exec/ artifacts/ common/
#   batch/     batch/ contract/ exec/ artifacts/ common/ (the batch runner: jobs, merge, journal)
#   mcp/       mcp/ contract/ exec/ artifacts/ common/   (the MCP server, under both front ends)
#   service/   service/ mcp/ contract/ exec/ artifacts/ common/
# A quoted #include is resolved as the compiler does (the file's folder, then the
# top of the tree, -I.). Fails naming each include that crosses a layer.
# --self-test: checks that a planted crossing is found.
set -u
cd "$(dirname "$0")/.."

allowed() { # folder, included path (from the top)
	case $1 in
	common) [[ $2 == common/* ]] ;;
	artifacts) [[ $2 == artifacts/* || $2 == common/* ]] ;;
	exec) [[ $2 == exec/* || $2 == common/* || $2 == contract/limits.h || $2 == contract/errors.h ]] ;;
	contract-bottom) [[ $2 == common/* || $2 == contract/limits.h || $2 == contract/errors.h ]] ;;
	contract) [[ $2 == contract/* || $2 == exec/* || $2 == artifacts/* || $2 == common/* ]] ;;
	batch) [[ $2 == batch/* || $2 == contract/* || $2 == exec/* || $2 == artifacts/* || $2 == common/* ]] ;;
	mcp) [[ $2 == mcp/* || $2 == contract/* || $2 == exec/* || $2 == artifacts/* || $2 == common/* ]] ;;
	service) [[ $2 != cli/* ]] ;;
	*) true ;;
	esac
}

check() { # files...
	local status=0 f inc dir target
	for f in "$@"; do
		dir=$(dirname "$f")
		while IFS= read -r inc; do
			target=$(realpath -m --relative-to=. "$dir/$inc")
			[ -e "$target" ] || target=$(realpath -m --relative-to=. "$inc")
			layer=${f%%/*}
			case $f in contract/limits.[ch] | contract/errors.[ch]) layer=contract-bottom ;; esac
			if ! allowed "$layer" "$target"; then
				echo "check_layers: $f includes $target, which $layer may not"
				status=1
			fi
		done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
	done
	return $status
}

if [ "${1:-}" = --self-test ]; then
	tmp=$(mktemp -d exec/.layers-XXXXXX)
	trap 'rm -rf "$tmp"' EXIT
	printf '#include "../../artifacts/render.h"\n' >"$tmp/planted.c"
	if check "$tmp/planted.c" >/dev/null; then
		echo "check_layers: self-test: exec/ including artifacts/ was not found"
		exit 1
	fi
	exit 0
fi

check $(git ls-files 'common/*.[ch]' 'artifacts/*.[ch]' 'exec/*.[ch]' 'contract/*.[ch]' \
	'batch/*.[ch]' 'mcp/*.[ch]' 'service/*.[ch]')
