#!/usr/bin/perl
# test/layers.pl: fail on a cycle between the modules of src/.
#
# A module is a .c file of src/ with its header of the same name.  Module A
# depends on module B when A's .c or .h includes B's header, or when A's
# object file uses a symbol that B's defines (nm).  The modules must form
# layers: no cycle, so that each can be read, and tested, on what lies
# below it.  Prints the modules layer by layer, lowest first (a module's
# layer is one more than the highest of what it depends on), and for a
# cycle the dependencies that close it.
#
# Usage: perl test/layers.pl SRCDIR   (objects are read where they are
# built, beside the sources; without them only includes are checked)
use strict;
use warnings;

my $src = shift // 'src';
opendir(my $dh, $src) or die "cannot read $src: $!";
my @files = grep { /\.[ch]$/ } readdir($dh);
closedir($dh);
my %module = map { (my $m = $_) =~ s/\.[ch]$//; ($m => 1) } @files;

# zorder.h holds what every module shares (a layout's key column) and
# belongs to none: zorder.c is only the library's entry point, the top.
# Including it makes no dependency; calling into zorder.c would.
my %shared_header = (zorder => 1);
my %dep;    # $dep{A}{B} = reason
foreach my $f (@files)
{
	(my $m = $f) =~ s/\.[ch]$//;
	open(my $fh, '<', "$src/$f") or die "cannot read $src/$f: $!";
	while (<$fh>)
	{
		next unless /^\s*#\s*include\s+"([^"]+)\.h"/;
		my $to = $1;
		next if $to eq $m || $shared_header{$to} || !-e "$src/$to.c";
		$dep{$m}{$to} //= "$f includes $to.h";
	}
	close $fh;
}

# symbols: who defines, who uses
my (%defined_by, %uses);
my $objects = 0;
foreach my $m (sort keys %module)
{
	my $o = "$src/$m.o";
	next unless -e $o;
	$objects++;
	open(my $nm, '-|', 'nm', $o) or die "cannot run nm: $!";
	while (<$nm>)
	{
		if (/^\S+\s+[TDBRC]\s+(\S+)$/) { $defined_by{$1} = $m; }
		elsif (/^\s+U\s+(\S+)$/) { push @{ $uses{$m} }, $1; }
	}
	close $nm;
}
foreach my $m (keys %uses)
{
	foreach my $s (@{ $uses{$m} })
	{
		my $to = $defined_by{$s};
		next if !defined $to || $to eq $m;
		$dep{$m}{$to} //= "$m.o calls $s ($to.c)";
	}
}

# Tarjan's strongly connected components: each one of more than one
# module is a cycle.
my ($index, @stack, %on, %idx, %low, @cycles) = (0);
sub visit
{
	my ($v) = @_;
	$idx{$v} = $low{$v} = $index++;
	push @stack, $v;
	$on{$v} = 1;
	foreach my $w (sort keys %{ $dep{$v} // {} })
	{
		if (!exists $idx{$w})
		{
			visit($w);
			$low{$v} = $low{$w} if $low{$w} < $low{$v};
		}
		elsif ($on{$w})
		{
			$low{$v} = $idx{$w} if $idx{$w} < $low{$v};
		}
	}
	if ($low{$v} == $idx{$v})
	{
		my @c;
		my $w;
		do { $w = pop @stack; $on{$w} = 0; push @c, $w; } while ($w ne $v);
		push @cycles, [ sort @c ] if @c > 1;
	}
	return;
}
my @mods = sort grep { -e "$src/$_.c" } keys %module;
visit($_) foreach grep { !exists $idx{$_} } @mods;

if (@cycles)
{
	foreach my $c (@cycles)
	{
		my %in = map { $_ => 1 } @$c;
		print "cycle: @$c\n";
		foreach my $a (@$c)
		{
			print "  $a -> $_: $dep{$a}{$_}\n"
			  foreach grep { $in{$_} } sort keys %{ $dep{$a} // {} };
		}
	}
	print "layers: " . scalar(@cycles) . " cycle(s) between modules of $src\n";
	exit 1;
}

my %layer;
sub layer_of
{
	my ($m) = @_;
	return $layer{$m} if defined $layer{$m};
	my $l = 0;
	foreach my $d (keys %{ $dep{$m} // {} })
	{
		my $dl = layer_of($d) + 1;
		$l = $dl if $dl > $l;
	}
	return $layer{$m} = $l;
}
layer_of($_) foreach @mods;
my $top = 0;
$top = $layer{$_} > $top ? $layer{$_} : $top foreach @mods;
foreach my $l (0 .. $top)
{
	my @in = sort grep { $layer{$_} == $l } @mods;
	printf "layer %d: %s\n", $l, join(' ', @in) if @in;
}
printf "layers: no cycle between the %d modules of %s (%s)\n", scalar(@mods),
  $src, $objects ? "includes and calls of $objects objects" : 'includes only';
exit 0;
