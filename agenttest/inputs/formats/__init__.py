"""The seed formats agent-test reads as found (FORMATS §18): each a package that turns its files into agent-test's
own Cases and registers an ``-i`` source (``b:``) that also recognises its files by their shape."""
