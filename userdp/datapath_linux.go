package userdp

// openNetdevPort opens a port on an existing interface (AF_PACKET).
func openNetdevPort(name string) (Port, error) {
	p, err := OpenNetdev(name, NetdevOptions{})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// openInternalPort creates a tap device.
func openInternalPort(name string) (Port, error) {
	p, err := OpenTap(name)
	if err != nil {
		return nil, err
	}
	return p, nil
}
