"""Reports: ``loading`` finds and reads run and training directories, ``tables`` builds the comparison
table (markdown, CSV), ``training`` the training table, ``plots`` the figures, ``write`` puts them together
(``delib report``; every experiment ends with one)."""
