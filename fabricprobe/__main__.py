from fabricprobe.cli.start import main

raise SystemExit(main())
