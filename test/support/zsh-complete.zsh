# zsh -f zsh-complete.zsh FUNCTION_DIR 'command line to complete'
# Runs an interactive zsh in a pseudo-terminal with compinit and FUNCTION_DIR on fpath, types the
# line and a TAB, and prints each match the completion system offers, one a line.
zmodload zsh/zpty || exit 2
zpty z zsh -f -i
zpty -w z "PROMPT='' RPROMPT='' PS2=''"
zpty -w z "fpath=(${(q)1} \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z "zstyle ':completion:*' list-prompt ''; zstyle ':completion:*' select-prompt ''; zstyle ':completion:*' menu no"
zpty -w z 'no_list() { compstate[list]=; compstate[insert]=; }; compprefuncs=( no_list )'
zpty -w z 'finish() { builtin print -r -- "<EOC>"; }; comppostfuncs=( finish )'
zpty -w z 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi; typeset -a __hits; builtin compadd -A __hits "$@"; local h; for h in $__hits; do builtin print -r -- "<HIT>$h"; done; builtin compadd "$@"; }'
zpty -w z "bindkey '^I' complete-word"
zpty -w z "print -r -- '<READY>'"
local line
while zpty -r z line; do [[ $line == *'<READY>'* && $line != *print* ]] && break; done
zpty -w -n z "$2"$'\t'
integer n=0
while zpty -r z line; do
  (( ++n > 2000 )) && break
  [[ $line == *'<EOC>'* ]] && break
  [[ $line == *'<HIT>'* ]] && print -r -- ${${line##*<HIT>}%%$'\r'*}
done
zpty -d z
