function _gpuq_completion;
    set -l response (env _GPUQ_COMPLETE=fish_complete COMP_WORDS=(commandline -cp) COMP_CWORD=(commandline -t) gpuq);

    for completion in $response;
        set -l metadata (string split --max 1 "," $completion);

        if test $metadata[1] = "dir";
            __fish_complete_directories $metadata[2];
        else if test $metadata[1] = "file";
            __fish_complete_path $metadata[2];
        else if test $metadata[1] = "plain";
            echo $metadata[2];
        end;
    end;
end;

complete --no-files --keep-order --command gpuq --arguments "(_gpuq_completion)";
