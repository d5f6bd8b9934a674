"""``duel publish``: the results store as a static site."""
from duel.host.cli import command, store
from duel.host.store import archive, site

DESCRIPTION = """Write the results store as a static site to the folder OUT.

Plain HTML and SVG files with relative links, no JavaScript: open OUT/index.html from disk or
put the folder on any static host. index.html lists every run; a page per scope (era, device,
precision, task, method) gives each run's PyTorch / TensorFlow verdict per pair of modes (the
latest %d runs are judged); a page per model charts each point's figure over the runs; where
runs differ only by machine, machines.html sets the latest run of each side by side. OUT must be
new, empty, or a site this command wrote: its own files are replaced (it keeps their list),
anything else there (a CNAME, notes of your own) stays.""" % site.VERDICT_RUNS


def add(subparsers):
    parser = command.add(subparsers, "publish", DESCRIPTION,
                         {command.FINE: None, command.BAD_INPUT: None},
                         ["duel publish site", "duel publish /srv/www/duel --store results/store"])
    parser.add_argument("out", metavar="OUT", help="the folder to write the site to")
    store.store_option(parser)
    parser.set_defaults(func=run)


def run(args):
    try:
        written = site.publish(store.opened(args), args.out)
    except archive.StoreError as error:
        raise command.Refusal(str(error))
    print("wrote %d files to %s: open %s/index.html" % (len(written), args.out, args.out))
    return command.FINE
