from tensorboard_bundle.launcher import main

main()
