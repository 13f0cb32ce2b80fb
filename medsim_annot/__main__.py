from medsim_annot.cli import main

main()
