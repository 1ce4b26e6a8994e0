#!/usr/bin/env bash
# rename-internal.sh: give internal names the sl__ / SL__ prefix (issue 14 item 4),
# from the reviewed list scripts/rename-internal.list, over src/ tests/ bench/ docs/
# and DEVELOPERS.md. include/ is never touched and no public name is in the list.
#
#   scripts/rename-internal.sh [--dry-run] [-v] [--no-format]
#                                                apply the list (from any directory of the
#                                                checkout; tracked files only), then
#                                                clang-format the C files it rewrote
#   scripts/rename-internal.sh --check           the convention, for ctest: no identifier
#                                                sl_* / SL_* in src/'s C that the public
#                                                headers do not declare (no ctags needed)
#   scripts/rename-internal.sh --check-symbols LIB.a...   every global symbol the static
#                                                libraries define is public or sl__
#   scripts/rename-internal.sh --propose         candidates for the list that it lacks
#                                                (universal-ctags), for review: never applied
#
# The list is explicit: nothing is renamed that it does not name. What is renamed is an
# identifier: in C, every token of the code and of comments, never the inside of a string
# or character literal (wire names, metric text, config keys stay as they are); in
# Markdown, every word; in scripts (.py .sh .cmake .yaml .js .lua ...), code and
# comments outside quotes on the line. Other files are left alone, with a warning if they
# name a listed identifier.
#
# Idempotent: a second run finds no old name and writes nothing. Before it writes a byte
# it fails (exit 2, nothing written) when
#   - an old or a new name is now declared by a public header (include/sluice/),
#   - an old name and its new name both occur and both are defined (ctags): the new
#     name exists with a different meaning; one defined and the other only used is a
#     tree renamed before a branch using the old name was merged, and is completed,
#   - an entry with a home (the CLI's unprefixed functions: src/cli/) has a definition
#     of its old name outside it (a function, variable, member, local or parameter of
#     the same name elsewhere is another thing),
#   - the list itself is inconsistent (duplicates, chains, malformed names).
set -euo pipefail
command -v perl >/dev/null || { echo "rename-internal.sh: needs perl" >&2; exit 2; }
exec perl -x "$0" "$@"
#!perl
use strict;
use warnings;
use File::Basename qw(dirname);
use Cwd qw(abs_path);

my $ROOT = abs_path(dirname(abs_path($0)) . '/..');
chdir $ROOT or die "rename-internal.sh: cannot enter $ROOT: $!\n";
my $LIST = 'scripts/rename-internal.list';
my @TREE = qw(src tests bench docs DEVELOPERS.md);
my $PREFIXED = qr/^(?:sl|SL)_(?!_)[A-Za-z0-9]\w*$/;

my ($mode, $dry, $verbose, $format) = ('apply', 0, 0, 1);
my @libs;
while (@ARGV) {
    my $a = shift @ARGV;
    if    ($a eq '--dry-run')       { $dry = 1 }
    elsif ($a eq '-v')              { $verbose = 1 }
    elsif ($a eq '--no-format')     { $format = 0 }
    elsif ($a eq '--check')         { $mode = 'check' }
    elsif ($a eq '--propose')       { $mode = 'propose' }
    elsif ($a eq '--check-symbols') { $mode = 'symbols'; @libs = @ARGV; @ARGV = () }
    elsif ($a eq '--list')          { $LIST = shift @ARGV // die "--list needs a file\n" }
    else { die "usage: rename-internal.sh [--dry-run] [-v] [--no-format] [--list FILE] | --check | "
             . "--check-symbols LIB.a... | --propose\n" }
}

# ---- files and their lexical segments ---------------------------------------------

sub tracked {
    my @roots = grep { -e } @_;
    return () unless @roots;
    my @f;
    if (-e '.git') {
        open my $g, '-|', 'git', 'ls-files', '-z', '--', @roots or die "git ls-files: $!\n";
        local $/ = "\0";
        @f = map { chomp; $_ } <$g>;
        close $g;
    } else {
        open my $g, '-|', 'find', @roots, '-type', 'f', '-print0' or die "find: $!\n";
        local $/ = "\0";
        @f = map { chomp; $_ } <$g>;
        close $g;
    }
    return grep { -f $_ && !-l $_ } @f;
}

# How a file is read: 'c' (C lexer), 'md' (every word), 'hash' / 'slash' / 'lua'
# (line comments starting with #, //, --; quotes protected), or 'other' (never written).
sub file_type {
    my ($p) = @_;
    return 'c' if $p =~ /\.(?:c|h|cc|cpp|inc)(?:\.in)?$/;
    return 'md' if $p =~ /\.md$/;
    return 'hash' if $p =~ /(?:\.(?:py|sh|bash|cmake|yaml|yml|conf|supp|toml|txt)|CMakeLists\.txt)$/;
    return 'slash' if $p =~ /\.(?:js|mjs|ts|proto|go)$/;
    return 'lua' if $p =~ /\.lua$/;
    return 'other';
}

sub slurp {
    my ($p) = @_;
    open my $fh, '<:raw', $p or die "$p: $!\n";
    local $/;
    my $t = <$fh>;
    close $fh;
    return $t // '';
}

# Segments [kind, text], kind: 'code', 'comment' (both renamable) or 'lit' (kept).
sub segments_c {
    my ($t) = @_;
    my @s;
    while ($t =~ m{\G(?:
            ("(?:[^"\\\n]|\\.)*"?)                # string literal (to the line end at worst)
          | ('(?:[^'\\\n]|\\.)*'?)                # character literal
          | (//[^\n]*)                            # line comment
          | (/\*.*?(?:\*/|\z))                    # block comment
          | ([^"'/]+|/)                           # code
        )}gsx) {
        if    (defined $1) { push @s, ['lit', $1] }
        elsif (defined $2) { push @s, ['lit', $2] }
        elsif (defined $3) { push @s, ['comment', $3] }
        elsif (defined $4) { push @s, ['comment', $4] }
        else               { push @s, ['code', $5] }
    }
    return \@s;
}

sub segments_line {
    my ($t, $comment) = @_;
    my @s;
    for my $line (split /(?<=\n)/, $t) {
        while ($line =~ m{\G(?:
                ($comment.*)                      # the rest of the line is a comment
              | ("(?:[^"\\\n]|\\.)*"?)
              | ('(?:[^'\\\n]|\\.)*'?)
              | (`(?:[^`\\\n]|\\.)*`?)
              | ((?:(?!$comment)[^"'`])+)
            )}gsx) {
            if    (defined $1) { push @s, ['comment', $1] }
            elsif (defined $5) { push @s, ['code', $5] }
            else               { push @s, ['lit', $2 // $3 // $4] }
        }
    }
    return \@s;
}

sub segments {
    my ($type, $t) = @_;
    return segments_c($t) if $type eq 'c';
    return [['code', $t]] if $type eq 'md';
    return segments_line($t, qr/#/) if $type eq 'hash';
    return segments_line($t, qr{//}) if $type eq 'slash';
    return segments_line($t, qr/--/) if $type eq 'lua';
    return [['lit', $t]];
}

sub words { my ($t) = @_; return $t =~ /(?<![\w\$])([A-Za-z_]\w*)/g }

# The public namespace: every identifier of the public headers' code (declarations,
# macros, enumerators, members; not their comments).
sub public_names {
    my %pub;
    for my $f (tracked('include/sluice')) {
        next unless $f =~ /\.h(?:\.in)?$/;
        for my $s (@{segments_c(slurp($f))}) {
            $pub{$_} = 1 for $s->[0] eq 'code' ? words($s->[1]) : ();
        }
    }
    die "rename-internal.sh: no public header found under include/sluice\n" unless %pub;
    return \%pub;
}

sub line_of { my ($t, $pos) = @_; return 1 + (substr($t, 0, $pos) =~ tr/\n//) }

# ---- --check: no non-public sl_/SL_ identifier in src/'s C ------------------------

sub check_src {
    my $pub = public_names();
    my @pubnames = keys %$pub;
    my $bad = 0;
    for my $f (tracked('src')) {
        next unless file_type($f) eq 'c';
        my $text = slurp($f);
        my $pos = 0;
        for my $s (@{segments_c($text)}) {
            my $seg = $s->[1];
            if ($s->[0] ne 'lit') {
                while ($seg =~ /(?<![\w\$])((?:sl|SL)_(?!_)\w*)(\*?)/g) {
                    my ($w, $star) = ($1, $2);
                    next if $pub->{$w};
                    # "SL_E*", "SL_PRIORITY_": a pattern of public names
                    next if ($star || $w =~ /_$/) && grep { index($_, $w) == 0 } @pubnames;
                    printf "%s:%d: %s is not declared in include/sluice/: internal names are sl__ / SL__\n",
                        $f, line_of($text, $pos + $-[1]), $w;
                    $bad++;
                }
            }
            $pos += length $seg;
        }
    }
    if ($bad) {
        print STDERR "rename-internal.sh --check: $bad non-public sl_/SL_ identifier(s) in src/ "
            . "(add them to $LIST and run scripts/rename-internal.sh)\n";
        exit 1;
    }
    print "rename-internal.sh --check: src/ uses sl_/SL_ only for public names\n";
    exit 0;
}

# ---- --check-symbols: globals of the static libraries -----------------------------

sub check_symbols {
    die "--check-symbols needs at least one library\n" unless @libs;
    my $pub = public_names();
    my $bad = 0;
    for my $lib (@libs) {
        open my $nm, '-|', 'nm', '--defined-only', '-g', $lib or die "nm $lib: $!\n";
        my $obj = '';
        my $n = 0;
        while (<$nm>) {
            if (/^(.*\.o):$/) { $obj = $1; next }
            next unless /^\S*\s+([A-Za-z])\s+(\S+)$/;
            my ($k, $sym) = ($1, $2);
            $n++;
            next if $obj =~ /\.pb-c\.c\.o$/;    # protobuf-c's generated code, its own names
            next if $sym =~ /^__/ || $sym =~ /\./;   # the compiler's and sanitizers' (__odr_asan.x, __sancov_*)
            next if $sym =~ /^sl__/ || $pub->{$sym} || $sym eq 'main';
            print "$lib($obj): $sym ($k) is neither public nor sl__\n";
            $bad++;
        }
        close $nm or die "nm $lib failed\n";
        die "$lib: no symbol (not a library?)\n" unless $n;
    }
    if ($bad) {
        print STDERR "rename-internal.sh --check-symbols: $bad global(s) without the sl__ prefix\n";
        exit 1;
    }
    print "rename-internal.sh --check-symbols: every global is public or sl__\n";
    exit 0;
}

# ---- ctags: definitions -----------------------------------------------------------

sub ctags_defs {
    my @files = @_;
    my $ct = `sh -c 'command -v ctags-universal || command -v universal-ctags || command -v ctags' 2>/dev/null`;
    chomp $ct;
    die "rename-internal.sh: needs universal-ctags (Debian: universal-ctags)\n"
        unless $ct && `$ct --version 2>/dev/null` =~ /Universal Ctags/;
    my $tmp = "/tmp/rename-internal.$$.files";
    open my $o, '>', $tmp or die "$tmp: $!\n";
    print $o "$_\n" for @files;
    close $o;
    my %defs;
    open my $c, '-|', $ct, '--languages=C', '--langmap=C:.c.h', '--kinds-C=+lpxz',
        '--fields-C=+{properties}', '-x', '--_xformat=%N %K %F:%n %{C.properties}', '-L', $tmp
        or die "ctags: $!\n";
    while (<$c>) {
        my ($name, $kind, $where, $props) = split ' ', $_, 4;
        next unless defined $where;
        push @{$defs{$name}}, {kind => $kind, where => $where, static => (($props // '') =~ /static/ ? 1 : 0)};
    }
    close $c;
    unlink $tmp;
    return \%defs;
}

sub defs_of {    # the definitions of a name: not prototypes, not extern declarations
    my ($defs, $name) = @_;
    return grep { $_->{kind} ne 'prototype' && $_->{kind} ne 'externvar' } @{$defs->{$name} // []};
}

# ---- the list ---------------------------------------------------------------------

sub read_list {
    open my $fh, '<', $LIST or die "rename-internal.sh: $LIST: $!\n";
    my (@pairs, %old, %new, @err);
    while (<$fh>) {
        s/#.*//;
        next unless /\S/;
        my ($o, $n, $kind, $home, @extra) = split;
        my $at = "$LIST:$.";
        if (!defined $kind || @extra) { push @err, "$at: want 'old new kind [home]'"; next }
        push @err, "$at: $o is not an identifier" unless $o =~ /^[A-Za-z_]\w*$/;
        push @err, "$at: $n is not an internal name (sl__ / SL__)" unless $n =~ /^(?:sl__|SL__)\w+$/;
        push @err, "$at: $o is already internal" if $o =~ /^(?:sl__|SL__)/;
        push @err, "$at: $o listed twice" if $old{$o}++;
        push @err, "$at: $n is the new name of two entries" if $new{$n}++;
        push @pairs, {old => $o, new => $n, kind => $kind, home => $home};
    }
    close $fh;
    for my $p (@pairs) {
        push @err, "$LIST: $p->{new} is also an old name (a chain is not idempotent)" if $old{$p->{new}};
    }
    die join("\n", @err) . "\n" if @err;
    return \@pairs;
}

# ---- apply ------------------------------------------------------------------------

sub apply {
    my $pairs = read_list();
    my %map = map { $_->{old} => $_->{new} } @$pairs;
    my %newname = map { $_->{new} => 1 } @$pairs;
    my $pub = public_names();

    my (%files, %seen, %kept, @warn);
    for my $f (tracked(@TREE)) {
        my $type = file_type($f);
        my $text = slurp($f);
        next if index($text, "\0") >= 0;
        my $segs = segments($type, $text);
        my $hit = 0;
        my $pos = 0;
        for my $s (@$segs) {
            for my $w (words($s->[1])) {
                next unless $map{$w} || $newname{$w};
                if ($s->[0] eq 'lit') {
                    push @{$kept{$w}}, $f if $map{$w};
                } else {
                    $seen{$w}{$f} = 1;
                    $hit = 1 if $map{$w};
                }
            }
        }
        if ($type eq 'other') {
            push @warn, "$f: names " . join(', ', sort grep { $map{$_} } keys %{{map { $_ => 1 } words($text)}})
                . " (not a known file type: left alone)" if grep { $map{$_} } words($text);
            next;
        }
        $files{$f} = {type => $type, segs => $segs} if $hit;
    }

    my @fail;
    for my $p (@$pairs) {
        push @fail, "$p->{old}: declared in include/sluice/ (public): drop it from the list"
            if $pub->{$p->{old}};
        push @fail, "$p->{new}: declared in include/sluice/ (public)" if $pub->{$p->{new}};
    }
    my @need = grep { $seen{$_->{old}} && ($seen{$_->{new}} || $_->{home}) } @$pairs;
    if (@need) {
        my $defs = ctags_defs(grep { file_type($_) eq 'c' } tracked(qw(src tests bench)));
        for my $p (@need) {
            my @od = defs_of($defs, $p->{old});
            my @nd = defs_of($defs, $p->{new});
            if ($seen{$p->{new}} && @od && @nd) {
                push @fail, "$p->{new} already exists ("
                    . join(', ', map {"$_->{kind} $_->{where}"} @nd) . ") and $p->{old} is defined too ("
                    . join(', ', map {"$_->{kind} $_->{where}"} @od) . "): a different meaning";
            }
            if ($p->{home}) {
                my @out = grep { index($_->{where}, $p->{home}) != 0 } @od;
                push @fail, "$p->{old}: defined outside $p->{home} ("
                    . join(', ', map {"$_->{kind} $_->{where}"} @out) . "): another thing of that name"
                    if @out;
                my @st = grep { $_->{static} && $_->{kind} eq 'function' && index($_->{where}, $p->{home}) == 0 } @od;
                push @fail, "$p->{old}: now static ($st[0]{where}): drop it from the list" if @st;
            }
        }
    }
    if (@fail) {
        print STDERR "rename-internal.sh: nothing written:\n", map {"  $_\n"} @fail;
        exit 2;
    }

    my (%by_kind, $changed, @written);
    for my $p (@$pairs) {
        my $state = $seen{$p->{old}} ? 'renamed' : $seen{$p->{new}} ? 'already' : 'absent';
        $by_kind{$p->{kind}}{$state}++;
        print "  $p->{old} -> $p->{new}: $state\n" if $verbose;
    }
    for my $f (sort keys %files) {
        my $out = '';
        for my $s (@{$files{$f}{segs}}) {
            my $t = $s->[1];
            $t =~ s/(?<![\w\$])([A-Za-z_]\w*)/exists $map{$1} ? $map{$1} : $1/ge unless $s->[0] eq 'lit';
            $out .= $t;
        }
        next if $out eq slurp($f);
        $changed++;
        print "  rewrote $f\n" if $verbose;
        next if $dry;
        my $mode = (stat $f)[2] & 07777;
        open my $o, '>:raw', "$f.rename-tmp" or die "$f.rename-tmp: $!\n";
        print $o $out;
        close $o or die "$f: $!\n";
        chmod $mode, "$f.rename-tmp";
        rename "$f.rename-tmp", $f or die "$f: $!\n";
        push @written, $f if $files{$f}{type} eq 'c';
    }
    # as `make format` would: a longer name may move a line past the column limit
    if ($format && @written) {
        if (system('sh', '-c', 'command -v clang-format >/dev/null') == 0) {
            system('clang-format', '-i', @written) == 0 or die "clang-format failed\n";
        } else {
            print STDERR "warning: no clang-format: run make format\n";
        }
    }
    print STDERR "warning: $_\n" for @warn;
    for my $w (sort keys %kept) {
        my %u = map { $_ => 1 } @{$kept{$w}};
        print "  kept $w inside literals: ", join(' ', sort keys %u), "\n";
    }
    printf "rename-internal.sh: %s%d file(s) %s\n", $dry ? '(dry run) ' : '', $changed // 0,
        $dry ? 'would change' : 'changed';
    for my $k (sort keys %by_kind) {
        my $b = $by_kind{$k};
        printf "  %-11s %3d renamed, %3d already renamed, %3d absent\n", $k, $b->{renamed} // 0,
            $b->{already} // 0, $b->{absent} // 0;
    }
    exit 0;
}

# ---- --propose: what the list lacks ------------------------------------------------

sub propose {
    my $pairs = -e $LIST ? read_list() : [];
    my %listed = map { $_->{old} => 1 } @$pairs;
    my $pub = public_names();
    my @cfiles = grep { file_type($_) eq 'c' } tracked('src');
    my (%code, %comment);
    for my $f (@cfiles) {
        for my $s (@{segments_c(slurp($f))}) {
            next if $s->[0] eq 'lit';
            for my $w (words($s->[1])) {
                next unless $w =~ $PREFIXED && !$pub->{$w} && !$listed{$w};
                ($s->[0] eq 'code' ? \%code : \%comment)->{$w}{$f} = 1;
            }
        }
    }
    my $defs = ctags_defs(@cfiles);
    my $kind = sub {
        my ($w) = @_;
        my %k = map { $_->{kind} => 1 } defs_of($defs, $w);
        return 'macro' if $k{macro};
        return 'enumerator' if $k{enumerator};
        return 'type' if $k{typedef} || $k{struct} || $k{enum} || $k{union};
        return 'function' if $k{function};
        return 'variable' if $k{variable};
        return 'other';
    };
    my $new = sub { my ($w) = @_; $w =~ s/^(sl|SL)_/${1}__/; $w };
    for my $w (sort keys %code) { printf "%s %s %s\n", $w, $new->($w), $kind->($w) }
    for my $w (sort keys %comment) {
        next if $code{$w};
        my $pattern = grep { index($_, $w) == 0 && $_ ne $w } (keys %code, keys %listed);
        printf "%s %s %s    # only in comments: %s\n", $w, $new->($w), $pattern ? 'pattern' : 'comment',
            join(' ', sort keys %{$comment{$w}});
    }
    # src/cli: functions that are neither static nor prefixed
    for my $name (sort keys %$defs) {
        next if $listed{$name} || $name eq 'main' || $name =~ /^sl_/;
        for my $d (grep { $_->{kind} eq 'function' && !$_->{static} } @{$defs->{$name}}) {
            next unless $d->{where} =~ m{^src/cli/};
            print "$name sl__cli_$name function src/cli/\n";
            last;
        }
    }
    exit 0;
}

check_src() if $mode eq 'check';
check_symbols() if $mode eq 'symbols';
propose() if $mode eq 'propose';
apply();
